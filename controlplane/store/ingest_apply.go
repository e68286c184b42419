package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// applyBatch applies the records screen let through, in six steps, each one statement:
// store them (insertRecords: only request IDs not stored before are new), add the new
// ones to the daily aggregates (addDailyUsage), move their keys' last use forward
// (noteKeyUse), add them to the per-minute series (addSeries), debit each account once
// for its new ones (debitAccounts), and read the balances of every account the batch
// mentions for the reply (replyBalances).
//
// With skipStored false the records are inserted plainly, which fails the transaction with
// a unique violation (isStoredRecord) if any of them was stored before; the caller then
// applies the batch again with skipStored true.
func (s *Store) applyBatch(ctx context.Context, tx pgx.Tx, nodeID, batchID string, in screened, skipStored bool) (usage.Reply, error) {
	fresh, err := insertRecords(ctx, tx, nodeID, in.records, skipStored)
	if err != nil {
		return usage.Reply{}, err
	}
	if err := addDailyUsage(ctx, tx, fresh); err != nil {
		return usage.Reply{}, err
	}
	if err := addKeyDailyUsage(ctx, tx, fresh); err != nil {
		return usage.Reply{}, err
	}
	if err := noteKeyUse(ctx, tx, fresh); err != nil {
		return usage.Reply{}, err
	}
	if err := addSeries(ctx, tx, nodeID, fresh); err != nil {
		return usage.Reply{}, err
	}
	// Last: the ledger insert takes the ledger clock's row lock, which every ledger
	// transaction needs and holds until commit.
	if err := s.debitAccounts(ctx, tx, nodeID, batchID, fresh, in.known); err != nil {
		return usage.Reply{}, err
	}
	reply, err := replyBalances(ctx, tx, in.records)
	if err != nil {
		return usage.Reply{}, err
	}
	if reply.Spent, err = replySpent(ctx, tx, reply.Balances, s.now()); err != nil {
		return usage.Reply{}, err
	}
	reply.Inserted = len(fresh)
	return reply, nil
}

// insertRecords stores the records (sorted by request ID) and returns those that were new.
// With skipStored, a request ID stored before is a duplicate and changes nothing (ON
// CONFLICT DO NOTHING, and the new IDs returned). Without it the records are copied in
// (COPY, copyRecords), and a request ID stored before fails it (a unique violation,
// isStoredRecord): the fast way for the usual batch, none of whose records is stored yet,
// since Postgres then neither checks every row for a conflict before inserting it
// (speculative insertion, a lock per row) nor returns the IDs, nor plans a statement.
func insertRecords(ctx context.Context, tx pgx.Tx, nodeID string, recs []usage.Record, skipStored bool) ([]*usage.Record, error) {
	n := len(recs)
	if n == 0 {
		return nil, nil
	}
	if !skipStored {
		src := copyRecords{recs: recs, nodeID: nodeID, i: -1}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"request_records"}, copiedRecordColumns, &src); err != nil {
			return nil, fmt.Errorf("insert records: %w", err)
		}
		fresh := make([]*usage.Record, n)
		for i := range recs {
			fresh[i] = &recs[i]
		}
		return fresh, nil
	}
	var (
		ids, accounts, models, endpoints = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		providers, residencies, results  = make([]string, n), make([]string, n), make([]string, n)
		keyIDs, routing                  = make([]*string, n), make([]*string, n)
		tss                              = make([]time.Time, n)
		streams                          = make([]bool, n)
		statuses                         = make([]int32, n)
		prompt, completion               = make([]int64, n), make([]int64, n)
		price, duration                  = make([]int64, n), make([]int64, n)
	)
	var enc []byte // routing JSON, one buffer for the batch
	for i := range recs {
		r := &recs[i]
		ids[i], tss[i], accounts[i], keyIDs[i], models[i] = r.RequestID, r.TS.UTC(), r.AccountID, r.KeyID, r.Model
		endpoints[i], streams[i], providers[i], residencies[i] = r.Endpoint, r.Stream, r.Provider, r.Residency
		statuses[i], results[i], prompt[i], completion[i] = int32(r.Status), r.Result, r.PromptTokens, r.CompletionTokens
		price[i], duration[i] = r.PriceMicroSEK, r.DurationMS
		if r.Routing != nil {
			enc = r.Routing.AppendJSON(enc[:0])
			str := string(enc)
			routing[i] = &str
		}
	}
	rows, err := tx.Query(ctx, insertNewRecordsSQL, ids, tss, accounts, keyIDs, models, endpoints, streams, providers,
		residencies, statuses, results, prompt, completion, price, duration, routing, nodeID)
	if err != nil {
		return nil, fmt.Errorf("insert records: %w", err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("insert records: %w", err)
	}
	slices.Sort(got)
	fresh := make([]*usage.Record, 0, len(got))
	for i := range recs { // both sorted by request ID
		if len(got) > 0 && got[0] == recs[i].RequestID {
			fresh = append(fresh, &recs[i])
			got = got[1:]
		}
	}
	return fresh, nil
}

// copiedRecordColumns are the columns copyRecords gives, in its order.
var copiedRecordColumns = []string{"request_id", "ts", "account_id", "key_id", "model", "endpoint", "stream",
	"provider", "residency", "status", "result", "prompt_tokens", "completion_tokens", "price_micro_sek",
	"duration_ms", "routing_json", "node_id"}

// copyRecords gives a batch's records to COPY (a pgx.CopyFromSource), a row at a time in
// their order (by request ID, the order of their row locks, as the INSERT's ORDER BY),
// in one reused row and one buffer for the routing JSON.
type copyRecords struct {
	recs   []usage.Record
	nodeID string
	i      int
	row    [17]any
	enc    []byte
}

func (c *copyRecords) Next() bool {
	c.i++
	return c.i < len(c.recs)
}

func (c *copyRecords) Values() ([]any, error) {
	r := &c.recs[c.i]
	var routing any // NULL without routing
	if r.Routing != nil {
		c.enc = r.Routing.AppendJSON(c.enc[:0])
		routing = string(c.enc)
	}
	c.row = [17]any{r.RequestID, r.TS.UTC(), r.AccountID, r.KeyID, r.Model, r.Endpoint, r.Stream, r.Provider,
		r.Residency, int32(r.Status), r.Result, r.PromptTokens, r.CompletionTokens, r.PriceMicroSEK, r.DurationMS,
		routing, c.nodeID}
	return c.row[:], nil
}

func (c *copyRecords) Err() error { return nil }

// insertNewRecordsSQL inserts the records not stored before, in request ID order (the order
// of their row locks), and returns their request IDs.
const insertNewRecordsSQL = `INSERT INTO request_records (request_id, ts, account_id, key_id, model, endpoint, stream,
		provider, residency, status, result, prompt_tokens, completion_tokens, price_micro_sek, duration_ms, routing_json, node_id)
	SELECT r.request_id, r.ts, r.account_id, r.key_id, r.model, r.endpoint, r.stream, r.provider, r.residency,
		r.status, r.result, r.prompt_tokens, r.completion_tokens, r.price_micro_sek, r.duration_ms, r.routing::json, $17
	FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bool[], $8::text[],
		$9::text[], $10::int[], $11::text[], $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::text[])
		AS r(request_id, ts, account_id, key_id, model, endpoint, stream, provider, residency, status, result,
			prompt_tokens, completion_tokens, price_micro_sek, duration_ms, routing)
	ORDER BY r.request_id
	ON CONFLICT (request_id) DO NOTHING
	RETURNING request_id`

// isStoredRecord reports the unique violation of a plain records insert (insertRecords
// without skipStored): a record of the batch was stored before.
func isStoredRecord(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "23505" && strings.HasPrefix(pg.TableName, "request_records")
}

// debitAccounts appends one debit per known account with new priced records: minus the
// sum of their prices, with a note naming the batch. The records are the proof of each
// charge, and exactly-once rests on their request IDs: insertRecords stored them in this
// transaction, and only records new to it are charged. In account order; the ledger's
// trigger adds the debits to the balances. A record of an unknown account is stored but
// not charged.
func (s *Store) debitAccounts(ctx context.Context, tx pgx.Tx, nodeID, batchID string, fresh []*usage.Record, known map[string]bool) error {
	sums, counts := map[string]int64{}, map[string]int{}
	for _, r := range fresh {
		if r.PriceMicroSEK <= 0 {
			continue
		}
		if !known[r.AccountID] {
			s.log.Error("usage record for unknown account: stored, not charged", "request_id", r.RequestID, "account", r.AccountID, "node", nodeID)
			continue
		}
		d := sums[r.AccountID]
		if !addChecked(&d, r.PriceMicroSEK) { // screen bounded every account's debits
			return fmt.Errorf("debits of %s overflow", r.AccountID)
		}
		sums[r.AccountID] = d
		counts[r.AccountID]++
	}
	if len(sums) == 0 {
		return nil
	}
	accts := make([]string, 0, len(sums))
	for a := range sums {
		accts = append(accts, a)
	}
	slices.Sort(accts)
	amounts, notes := make([]int64, len(accts)), make([]string, len(accts))
	batch := cleanText(clip(batchID)) + " from node " + cleanText(clip(nodeID))
	for i, a := range accts {
		amounts[i] = -sums[a]
		notes[i] = fmt.Sprintf("usage: %d records, batch %s", counts[a], batch)
	}
	_, err := tx.Exec(ctx, `INSERT INTO ledger (account_id, amount_micro_sek, kind, note, created_at)
		SELECT d.account_id, d.amount, 'debit', d.note, $4
		FROM unnest($1::text[], $2::bigint[], $3::text[]) AS d(account_id, amount, note)
		ORDER BY d.account_id`, accts, amounts, notes, s.now())
	if err != nil {
		return fmt.Errorf("insert debits: %w", err)
	}
	return nil
}

// addDailyUsage adds the new records to usage_daily, one upsert row per (account, day,
// model), in that order. screen bounded every sum.
func addDailyUsage(ctx context.Context, tx pgx.Tx, fresh []*usage.Record) error {
	days := dayTotals{}
	for _, r := range fresh {
		if !days.add(r) {
			return fmt.Errorf("daily usage of %s overflows", r.AccountID)
		}
	}
	if len(days) == 0 {
		return nil
	}
	keys := make([]dayKey, 0, len(days))
	for k := range days {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareDayKeys)
	n := len(keys)
	accts, dates, models := make([]string, n), make([]string, n), make([]string, n)
	reqs, prompt, completion, price := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for i, k := range keys {
		u := days[k]
		accts[i], dates[i], models[i] = k.account, k.day, k.model
		reqs[i], prompt[i], completion[i], price[i] = u.Requests, u.PromptTokens, u.CompletionTokens, u.PriceMicroSEK
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
		accts, dates, models, reqs, prompt, completion, price); err != nil {
		return fmt.Errorf("update daily usage: %w", err)
	}
	return nil
}

// noteKeyUse moves each key's last use (key_last_use) forward to the time of its newest
// new record: one upsert row per key, in key order. Keys that are not in api_keys are
// skipped (a record may name any key; the table keeps only real ones).
func noteKeyUse(ctx context.Context, tx pgx.Tx, fresh []*usage.Record) error {
	last := map[string]time.Time{}
	for _, r := range fresh {
		if r.KeyID == nil {
			continue
		}
		if t, ok := last[*r.KeyID]; !ok || r.TS.After(t) {
			last[*r.KeyID] = r.TS
		}
	}
	if len(last) == 0 {
		return nil
	}
	keys := make([]string, 0, len(last))
	for k := range last {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	tss := make([]time.Time, len(keys))
	for i, k := range keys {
		tss[i] = last[k]
	}
	if _, err := tx.Exec(ctx, `INSERT INTO key_last_use AS u (key_id, last_ts)
		SELECT k.key_id, k.ts FROM unnest($1::text[], $2::timestamptz[]) AS k(key_id, ts)
		WHERE EXISTS (SELECT 1 FROM api_keys a WHERE a.id = k.key_id)
		ORDER BY k.key_id
		ON CONFLICT (key_id) DO UPDATE SET last_ts = EXCLUDED.last_ts WHERE u.last_ts < EXCLUDED.last_ts`,
		keys, tss); err != nil {
		return fmt.Errorf("note key use: %w", err)
	}
	return nil
}

// replyBalances reads the balances of every account the records mention and the ledger
// clock they reflect (which this transaction ticked when it debited anything).
func replyBalances(ctx context.Context, tx pgx.Tx, recs []usage.Record) (usage.Reply, error) {
	touched := make([]string, 0, len(recs))
	for i := range recs {
		touched = append(touched, recs[i].AccountID)
	}
	slices.Sort(touched)
	touched = slices.Compact(touched)
	reply := usage.Reply{Balances: []snapshot.Balance{}}
	rows, err := tx.Query(ctx, `SELECT b.account_id, b.balance_micro_sek, (SELECT seq FROM ledger_clock)
		FROM account_balances b WHERE b.account_id = ANY($1) ORDER BY b.account_id`, touched)
	if err != nil {
		return usage.Reply{}, fmt.Errorf("read balances: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var b snapshot.Balance
		if err := rows.Scan(&b.AccountID, &b.MicroSEK, &reply.BalanceSeq); err != nil {
			return usage.Reply{}, fmt.Errorf("read balances: %w", err)
		}
		reply.Balances = append(reply.Balances, b)
	}
	if err := rows.Err(); err != nil {
		return usage.Reply{}, fmt.Errorf("read balances: %w", err)
	}
	if len(reply.Balances) == 0 {
		seq, err := currentSeq(ctx, tx)
		if err != nil {
			return usage.Reply{}, err
		}
		reply.BalanceSeq = seq
	}
	return reply, nil
}
