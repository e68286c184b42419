package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// IngestBatch applies a usage batch in one transaction: records are inserted with
// ON CONFLICT (request_id) DO NOTHING, the ledger is debited (reference = request ID, so
// never twice) for newly inserted records only, and the daily per-model aggregates are
// updated. All row locks are taken in a fixed order (request IDs, then accounts, then
// aggregate keys, then the ledger clock), so concurrent batches cannot deadlock. The
// reply carries the balances of every account the batch mentions.
//
// Records whose account does not exist are stored but not charged (and logged).
func (s *Store) IngestBatch(ctx context.Context, b usage.Batch) (usage.Reply, error) {
	recs, err := normalizeBatch(b.Records)
	if err != nil {
		return usage.Reply{}, err
	}
	var reply usage.Reply
	err = s.retryTx(ctx, func(tx pgx.Tx) error {
		var err error
		reply, err = s.ingestTx(ctx, tx, b.NodeID, recs)
		return err
	})
	if err != nil {
		return usage.Reply{}, fmt.Errorf("ingest batch %q from %q: %w", b.BatchID, b.NodeID, err)
	}
	reply.BatchID = b.BatchID
	reply.Duplicates = len(b.Records) - reply.Inserted
	return reply, nil
}

// normalizeBatch validates records, drops repeated request IDs within the batch and sorts
// by request ID.
func normalizeBatch(in []usage.Record) ([]usage.Record, error) {
	recs := make([]usage.Record, 0, len(in))
	seen := make(map[string]bool, len(in))
	for i, r := range in {
		switch {
		case r.RequestID == "" || len(r.RequestID) > 200:
			return nil, fmt.Errorf("record %d: request_id must be 1 to 200 characters: %w", i, ErrInvalid)
		case r.AccountID == "":
			return nil, fmt.Errorf("record %s: account_id is required: %w", r.RequestID, ErrInvalid)
		case r.TS.IsZero():
			return nil, fmt.Errorf("record %s: ts is required: %w", r.RequestID, ErrInvalid)
		case r.PromptTokens < 0 || r.CompletionTokens < 0 || r.PriceMicroSEK < 0 || r.DurationMS < 0:
			return nil, fmt.Errorf("record %s: negative tokens, price or duration: %w", r.RequestID, ErrInvalid)
		case r.Result == "":
			return nil, fmt.Errorf("record %s: result is required: %w", r.RequestID, ErrInvalid)
		}
		if seen[r.RequestID] {
			continue
		}
		seen[r.RequestID] = true
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b usage.Record) int { return cmpString(a.RequestID, b.RequestID) })
	return recs, nil
}

func (s *Store) ingestTx(ctx context.Context, tx pgx.Tx, nodeID string, recs []usage.Record) (usage.Reply, error) {
	n := len(recs)
	var (
		ids, accounts, models, endpoints, providers, residencies, results []string
		keyIDs, routing                                                   []*string
		tss                                                               []time.Time
		streams                                                           []bool
		statuses                                                          []int32
		prompt, completion, price, duration                               []int64
	)
	for _, r := range recs {
		ids = append(ids, r.RequestID)
		tss = append(tss, r.TS.UTC())
		accounts = append(accounts, r.AccountID)
		keyIDs = append(keyIDs, r.KeyID)
		models = append(models, r.Model)
		endpoints = append(endpoints, r.Endpoint)
		streams = append(streams, r.Stream)
		providers = append(providers, r.Provider)
		residencies = append(residencies, r.Residency)
		statuses = append(statuses, int32(r.Status))
		results = append(results, r.Result)
		prompt = append(prompt, r.PromptTokens)
		completion = append(completion, r.CompletionTokens)
		price = append(price, r.PriceMicroSEK)
		duration = append(duration, r.DurationMS)
		var rj *string
		if r.Routing != nil {
			b, err := json.Marshal(r.Routing)
			if err != nil {
				return usage.Reply{}, fmt.Errorf("encode routing of %s: %w", r.RequestID, err)
			}
			str := string(b)
			rj = &str
		}
		routing = append(routing, rj)
	}
	inserted := map[string]bool{}
	if n > 0 {
		rows, err := tx.Query(ctx, `INSERT INTO request_records (request_id, ts, account_id, key_id, model, endpoint, stream,
				provider, residency, status, result, prompt_tokens, completion_tokens, price_micro_sek, duration_ms, routing, node_id)
			SELECT r.request_id, r.ts, r.account_id, r.key_id, r.model, r.endpoint, r.stream, r.provider, r.residency,
				r.status, r.result, r.prompt_tokens, r.completion_tokens, r.price_micro_sek, r.duration_ms, r.routing::jsonb, $17
			FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bool[], $8::text[],
				$9::text[], $10::int[], $11::text[], $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::text[])
				AS r(request_id, ts, account_id, key_id, model, endpoint, stream, provider, residency, status, result,
					prompt_tokens, completion_tokens, price_micro_sek, duration_ms, routing)
			ORDER BY r.request_id
			ON CONFLICT (request_id) DO NOTHING
			RETURNING request_id`,
			ids, tss, accounts, keyIDs, models, endpoints, streams, providers, residencies, statuses, results,
			prompt, completion, price, duration, routing, nodeID)
		if err != nil {
			return usage.Reply{}, fmt.Errorf("insert records: %w", err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return usage.Reply{}, fmt.Errorf("insert records: %w", err)
		}
		for _, id := range got {
			inserted[id] = true
		}
	}

	// Lock the balance rows of accounts with new charges, in account order.
	var chargeAccounts []string
	for _, r := range recs {
		if inserted[r.RequestID] && r.PriceMicroSEK > 0 {
			chargeAccounts = append(chargeAccounts, r.AccountID)
		}
	}
	slices.Sort(chargeAccounts)
	chargeAccounts = slices.Compact(chargeAccounts)
	existing := map[string]bool{}
	if len(chargeAccounts) > 0 {
		rows, err := tx.Query(ctx, `SELECT account_id FROM account_balances WHERE account_id = ANY($1) ORDER BY account_id FOR UPDATE`, chargeAccounts)
		if err != nil {
			return usage.Reply{}, fmt.Errorf("lock balances: %w", err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return usage.Reply{}, fmt.Errorf("lock balances: %w", err)
		}
		for _, a := range got {
			existing[a] = true
		}
	}

	// Debits, one per newly inserted priced record, in (account, request) order.
	type debit struct {
		account, ref string
		amount       int64
	}
	var debits []debit
	for _, r := range recs {
		if !inserted[r.RequestID] || r.PriceMicroSEK <= 0 {
			continue
		}
		if !existing[r.AccountID] {
			s.log.Error("usage record for unknown account: stored, not charged", "request_id", r.RequestID, "account", r.AccountID, "node", nodeID)
			continue
		}
		debits = append(debits, debit{r.AccountID, r.RequestID, -r.PriceMicroSEK})
	}
	slices.SortFunc(debits, func(a, b debit) int {
		if c := cmpString(a.account, b.account); c != 0 {
			return c
		}
		return cmpString(a.ref, b.ref)
	})
	deltas := map[string]int64{}
	if len(debits) > 0 {
		da, dr, dm := make([]string, len(debits)), make([]string, len(debits)), make([]int64, len(debits))
		for i, d := range debits {
			da[i], dr[i], dm[i] = d.account, d.ref, d.amount
		}
		rows, err := tx.Query(ctx, `INSERT INTO ledger (account_id, amount_micro_sek, kind, reference, created_at)
			SELECT d.account_id, d.amount, 'debit', d.reference, $4
			FROM unnest($1::text[], $2::text[], $3::bigint[]) AS d(account_id, reference, amount)
			ORDER BY d.account_id, d.reference
			ON CONFLICT (reference) DO NOTHING
			RETURNING account_id, amount_micro_sek`, da, dr, dm, s.now())
		if err != nil {
			return usage.Reply{}, fmt.Errorf("insert debits: %w", err)
		}
		for rows.Next() {
			var a string
			var amt int64
			if err := rows.Scan(&a, &amt); err != nil {
				rows.Close()
				return usage.Reply{}, fmt.Errorf("insert debits: %w", err)
			}
			deltas[a] += amt
		}
		if err := rows.Err(); err != nil {
			return usage.Reply{}, fmt.Errorf("insert debits: %w", err)
		}
	}

	// Daily aggregates in (account, day, model) order.
	type aggKey struct{ account, day, model string }
	agg := map[aggKey]*[4]int64{}
	for _, r := range recs {
		if !inserted[r.RequestID] {
			continue
		}
		k := aggKey{r.AccountID, r.TS.UTC().Format(time.DateOnly), r.Model}
		v := agg[k]
		if v == nil {
			v = new([4]int64)
			agg[k] = v
		}
		v[0]++
		v[1] += r.PromptTokens
		v[2] += r.CompletionTokens
		v[3] += r.PriceMicroSEK
	}
	if len(agg) > 0 {
		keys := make([]aggKey, 0, len(agg))
		for k := range agg {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b aggKey) int {
			if c := cmpString(a.account, b.account); c != 0 {
				return c
			}
			if c := cmpString(a.day, b.day); c != 0 {
				return c
			}
			return cmpString(a.model, b.model)
		})
		var ua, ud, um []string
		var ur, up, uc, upr []int64
		for _, k := range keys {
			v := agg[k]
			ua, ud, um = append(ua, k.account), append(ud, k.day), append(um, k.model)
			ur, up, uc, upr = append(ur, v[0]), append(up, v[1]), append(uc, v[2]), append(upr, v[3])
		}
		if _, err := tx.Exec(ctx, `INSERT INTO usage_daily AS u (account_id, day, model, requests, prompt_tokens, completion_tokens, price_micro_sek)
			SELECT a.account_id, a.day::date, a.model, a.requests, a.prompt, a.completion, a.price
			FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[])
				AS a(account_id, day, model, requests, prompt, completion, price)
			ORDER BY a.account_id, a.day, a.model
			ON CONFLICT (account_id, day, model) DO UPDATE SET requests = u.requests + EXCLUDED.requests,
				prompt_tokens = u.prompt_tokens + EXCLUDED.prompt_tokens,
				completion_tokens = u.completion_tokens + EXCLUDED.completion_tokens,
				price_micro_sek = u.price_micro_sek + EXCLUDED.price_micro_sek`,
			ua, ud, um, ur, up, uc, upr); err != nil {
			return usage.Reply{}, fmt.Errorf("update daily usage: %w", err)
		}
	}

	reply := usage.Reply{Inserted: len(inserted), Balances: []snapshot.Balance{}}
	if len(deltas) > 0 {
		seq, _, err := applyDeltas(ctx, tx, deltas)
		if err != nil {
			return usage.Reply{}, err
		}
		reply.BalanceSeq = seq
	}
	touched := slices.Clone(accounts)
	slices.Sort(touched)
	touched = slices.Compact(touched)
	rows, err := tx.Query(ctx, `SELECT b.account_id, b.balance_micro_sek, (SELECT seq FROM ledger_clock)
		FROM account_balances b WHERE b.account_id = ANY($1) ORDER BY b.account_id`, touched)
	if err != nil {
		return usage.Reply{}, fmt.Errorf("read balances: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var b snapshot.Balance
		var seq int64
		if err := rows.Scan(&b.AccountID, &b.MicroSEK, &seq); err != nil {
			return usage.Reply{}, fmt.Errorf("read balances: %w", err)
		}
		reply.Balances = append(reply.Balances, b)
		if reply.BalanceSeq == 0 {
			reply.BalanceSeq = seq
		}
	}
	if err := rows.Err(); err != nil {
		return usage.Reply{}, fmt.Errorf("read balances: %w", err)
	}
	if reply.BalanceSeq == 0 {
		seq, err := currentSeq(ctx, tx)
		if err != nil {
			return usage.Reply{}, err
		}
		reply.BalanceSeq = seq
	}
	return reply, nil
}

func currentSeq(ctx context.Context, q querier) (int64, error) {
	var seq int64
	err := q.QueryRow(ctx, `SELECT seq FROM ledger_clock`).Scan(&seq)
	return seq, translate(err, "ledger clock")
}

// retryTx runs fn in a transaction and retries it on serialization failures and deadlocks.
func (s *Store) retryTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = s.InTx(ctx, fn)
		if err == nil || !isRetryable(err) {
			return err
		}
		s.log.Warn("transaction retried", "attempt", attempt+1, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 10 * time.Millisecond):
		}
	}
	return err
}
