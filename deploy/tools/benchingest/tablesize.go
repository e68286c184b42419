package benchingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/oklog/ulid/v2"
)

// Every scenario starts on empty records (reset), so scenarios differ only in node count
// and batch size, not in how many records the ones before them left; the table-size rows
// then run the same scenario on empty records and on records filled to Config.SizeFill
// first (fill), to show that effect on its own.

// reset empties the records (every partition; TRUNCATE, as the schema owner) and the keys'
// last use, then checkpoints, so that the scenario starts from the same state as every
// other and does not pay for writing out what the one before it left. The ledger, the
// balances and the daily aggregates stay: the ledger is append-only (its trigger refuses
// TRUNCATE), and a scenario adds at most a few hundred thousand small rows to it.
func reset(ctx context.Context, s *stack) error {
	if _, err := s.db.Exec(ctx, `TRUNCATE request_records, key_last_use`); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	if _, err := s.db.Exec(ctx, `CHECKPOINT`); err != nil {
		return fmt.Errorf("reset: checkpoint: %w", err)
	}
	return nil
}

// fill inserts n records into today's partition directly (one INSERT … SELECT from
// generate_series, as the schema owner: not through the ingest, not charged), shaped as the
// simulated nodes' records are: request IDs in time order below every ID the nodes make
// after it, times spread over the past as if ingested at 50,000 records/s, the accounts in
// turn. Then VACUUM ANALYZE and a checkpoint, as autovacuum and the checkpointer would have
// left a table filled over hours, so that the scenario after it pays only for its own
// records. It returns how long the insert took.
func fill(ctx context.Context, s *stack, n int64, seed uint64) (time.Duration, error) {
	if n <= 0 {
		return 0, nil
	}
	nd := &node{accounts: s.accounts, rng: rand.New(rand.NewPCG(seed, 0)), key: "key_0123456789ab"}
	routing := string(nd.record(time.Now()).Routing.AppendJSON(nil))
	prefix := ulid.Make().String()[:10] // this millisecond, in the ULID's time characters
	start := time.Now()
	_, err := s.db.Exec(ctx, `INSERT INTO request_records (request_id, ts, account_id, key_id, model, endpoint, stream,
			provider, residency, status, result, prompt_tokens, completion_tokens, price_micro_sek, duration_ms, routing_json, node_id)
		SELECT 'req_' || $1 || lpad(g::text, 16, '0'),
			$2::timestamptz - ($3 - g) * interval '20 microseconds' - random() * interval '10 seconds',
			($4::text[])[1 + g % cardinality($4::text[])], $5, $6, '/v1/chat/completions', g % 2 = 0,
			'simulator', 'se-local', 200, 'ok', t.prompt, t.completion,
			(t.prompt * $7 + t.completion * $8) / 100, 100 + g % 5000, $9::json, 'bench-fill'
		FROM generate_series(1, $3::bigint) AS g,
			LATERAL (SELECT 50 + (random() * 2000)::bigint AS prompt, 10 + (random() * 1000)::bigint AS completion OFFSET 0) t`,
		prefix, time.Now().UTC(), n, s.accounts, nd.key, Model, int64(InOrePerMTok), int64(OutOrePerMTok), routing)
	if err != nil {
		return 0, fmt.Errorf("fill %d records: %w", n, err)
	}
	took := time.Since(start)
	for _, q := range []string{`VACUUM ANALYZE request_records`, `CHECKPOINT`} {
		if _, err := s.db.Exec(ctx, q); err != nil {
			return took, fmt.Errorf("fill: %s: %w", q, err)
		}
	}
	return took, nil
}

// countRecords is how many records the table holds.
func countRecords(ctx context.Context, s *stack) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM request_records`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count records: %w", err)
	}
	return n, nil
}
