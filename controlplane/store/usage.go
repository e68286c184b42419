package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// IngestBatch applies a usage batch in one transaction. Each record is checked first
// (checkRecord: identifiers, text, time, status, every count and the price within its
// bound; checkPrice: the price is the formula's for its tokens at a price its model had);
// a record that fails, or whose charge or daily sums would leave the int64 range, goes to
// rejected_records with the reason and is not charged, and the rest of the batch applies.
// So nothing a node sends can fail a batch for good: the reply is a success and the node
// may drop the batch from its spool.
//
// Accepted records are inserted with ON CONFLICT (request_id) DO NOTHING, the ledger is
// debited (reference = request ID, so never twice) for newly inserted records only, and
// the daily per-model aggregates (numeric, so they cannot overflow) are updated. All row
// locks are taken in a fixed order (accounts, then request IDs, then aggregate keys, then
// the ledger clock), so concurrent batches cannot deadlock. The reply carries the
// balances of every account the batch's accepted records mention.
//
// Records whose account does not exist are stored but not charged (and logged).
func (s *Store) IngestBatch(ctx context.Context, b usage.Batch) (usage.Reply, error) {
	return s.ingest(ctx, b.NodeID, b.BatchID, b.Records, nil, nil)
}

// IngestRaw is IngestBatch for records as a node sent them: each is decoded on its own, so
// one that does not decode is rejected (RejectUndecodable) instead of failing the batch,
// and rejections keep the record's bytes.
func (s *Store) IngestRaw(ctx context.Context, nodeID, batchID string, raws []json.RawMessage) (usage.Reply, error) {
	recs := make([]usage.Record, 0, len(raws))
	rawOf := make([][]byte, 0, len(raws))
	var bad []rejection
	for _, raw := range raws {
		var r usage.Record
		if err := json.Unmarshal(raw, &r); err != nil {
			// Name the record by its IDs where they are readable.
			var ids struct {
				RequestID any `json:"request_id"`
				AccountID any `json:"account_id"`
			}
			_ = json.Unmarshal(raw, &ids)
			str := func(v any) string { s, _ := v.(string); return cleanText(clip(s)) }
			bad = append(bad, rejection{requestID: str(ids.RequestID), accountID: str(ids.AccountID), code: RejectUndecodable,
				reason: cleanText(RejectUndecodable + ": " + err.Error()), raw: raw})
			continue
		}
		recs = append(recs, r)
		rawOf = append(rawOf, raw)
	}
	return s.ingest(ctx, nodeID, batchID, recs, rawOf, bad)
}

// candidate is a record that passed checkRecord.
type candidate struct {
	rec *usage.Record
	raw []byte // as received; nil when the record came decoded
}

func (s *Store) ingest(ctx context.Context, nodeID, batchID string, in []usage.Record, raws [][]byte, bad []rejection) (usage.Reply, error) {
	now := s.now()
	total := len(in) + len(bad)
	cands := make([]candidate, 0, len(in))
	seen := make(map[string]bool, len(in))
	for i := range in {
		r := &in[i]
		var raw []byte
		if raws != nil {
			raw = raws[i]
		}
		if code, detail := checkRecord(r, now); code != "" {
			bad = append(bad, reject(r, raw, code, "%s", detail))
			continue
		}
		if seen[r.RequestID] {
			continue
		}
		seen[r.RequestID] = true
		cands = append(cands, candidate{r, raw})
	}
	slices.SortFunc(cands, func(a, b candidate) int { return strings.Compare(a.rec.RequestID, b.rec.RequestID) })
	var reply usage.Reply
	var rejected []rejection
	start := time.Now()
	err := s.retryTx(ctx, func(tx pgx.Tx) error {
		accepted, rej, err := s.screen(ctx, tx, cands, bad)
		if err != nil {
			return err
		}
		if err := insertRejections(ctx, tx, nodeID, batchID, rej); err != nil {
			return err
		}
		reply, err = s.ingestTx(ctx, tx, nodeID, accepted)
		rejected = rej
		return err
	})
	took := time.Since(start)
	if err != nil {
		s.cfg.Metrics.BatchIngested(IngestStats{Records: total, Duration: took, Err: err})
		return usage.Reply{}, fmt.Errorf("ingest batch %q from %q: %w", batchID, nodeID, err)
	}
	s.noteRejections(nodeID, batchID, rejected)
	reply.BatchID = batchID
	reply.Rejected = len(rejected)
	reply.Duplicates = total - reply.Inserted - len(rejected)
	s.cfg.Metrics.BatchIngested(IngestStats{Records: total, Inserted: reply.Inserted, Duplicates: reply.Duplicates,
		Rejected: rejectedByCode(rejected), Duration: took})
	return reply, nil
}

// noteRejections logs a batch's rejections at warn (the first few one by one) and counts
// them.
func (s *Store) noteRejections(nodeID, batchID string, rs []rejection) {
	if len(rs) == 0 {
		return
	}
	s.rejected.Add(int64(len(rs)))
	for i, r := range rs {
		if i == 5 {
			break
		}
		s.log.Warn("usage record rejected", "node", nodeID, "batch", batchID, "request_id", r.requestID,
			"account", r.accountID, "reason", r.reason)
	}
	s.log.Warn("usage batch applied with rejected records", "node", nodeID, "batch", batchID,
		"rejected", len(rs), "rejected_total", s.rejected.Load())
}

// RejectedRecords returns how many usage records this store instance has rejected since
// it was opened (a counter; the records themselves are in rejected_records).
func (s *Store) RejectedRecords() int64 { return s.rejected.Load() }

// screen checks the candidates against the catalogue's prices and the int64 range of
// every sum they feed, and locks the balance rows of their accounts (in account order, the
// first locks the batch takes). It returns the accepted records, sorted by request ID,
// and every rejection (bad included).
func (s *Store) screen(ctx context.Context, tx pgx.Tx, cands []candidate, bad []rejection) ([]usage.Record, []rejection, error) {
	rej := slices.Clone(bad)
	var models []string
	for _, c := range cands {
		if c.rec.PromptTokens != 0 || c.rec.CompletionTokens != 0 || c.rec.PriceMicroSEK != 0 {
			models = append(models, c.rec.Model)
		}
	}
	prices := map[string][]price{}
	if len(models) > 0 {
		slices.Sort(models)
		models = slices.Compact(models)
		rows, err := tx.Query(ctx, `SELECT model_id, input_ore_per_million, output_ore_per_million, valid_to
			FROM model_prices WHERE model_id = ANY($1)`, models)
		if err != nil {
			return nil, nil, fmt.Errorf("read model prices: %w", err)
		}
		for rows.Next() {
			var m string
			var p price
			var to *time.Time
			if err := rows.Scan(&m, &p.in, &p.out, &to); err != nil {
				rows.Close()
				return nil, nil, fmt.Errorf("read model prices: %w", err)
			}
			if to != nil {
				p.validTo = *to
			}
			prices[m] = append(prices[m], p)
		}
		if err := rows.Err(); err != nil {
			return nil, nil, fmt.Errorf("read model prices: %w", err)
		}
	}
	priced := cands[:0:0]
	for _, c := range cands {
		if code, detail := checkPrice(c.rec, prices[c.rec.Model]); code != "" {
			rej = append(rej, reject(c.rec, c.raw, code, "%s", detail))
			continue
		}
		priced = append(priced, c)
	}

	// Lock and read the balances; a debit that would take a balance below the int64
	// minimum is refused, as is a record that would overflow its daily aggregate.
	var accts []string
	for _, c := range priced {
		accts = append(accts, c.rec.AccountID)
	}
	slices.Sort(accts)
	accts = slices.Compact(accts)
	balance := map[string]int64{}
	if len(accts) > 0 {
		rows, err := tx.Query(ctx, `SELECT account_id, balance_micro_sek FROM lock_balances($1)`, accts)
		if err != nil {
			return nil, nil, fmt.Errorf("lock balances: %w", err)
		}
		for rows.Next() {
			var a string
			var b int64
			if err := rows.Scan(&a, &b); err != nil {
				rows.Close()
				return nil, nil, fmt.Errorf("lock balances: %w", err)
			}
			balance[a] = b
		}
		if err := rows.Err(); err != nil {
			return nil, nil, fmt.Errorf("lock balances: %w", err)
		}
	}
	agg := map[aggKey]*[4]int64{}
	debits := map[string]int64{}
	accepted := make([]usage.Record, 0, len(priced))
	for _, c := range priced {
		r := c.rec
		if b, ok := balance[r.AccountID]; ok {
			d := debits[r.AccountID]
			if !addChecked(&b, -r.PriceMicroSEK) || !addChecked(&d, r.PriceMicroSEK) {
				rej = append(rej, reject(r, c.raw, RejectOverflow, "the balance of %s or the batch's debits would leave the int64 range", r.AccountID))
				continue
			}
			balance[r.AccountID], debits[r.AccountID] = b, d
		}
		k := aggKeyOf(r)
		v := agg[k]
		if v == nil {
			v = new([4]int64)
			agg[k] = v
		}
		w := *v
		if !addChecked(&w[0], 1) || !addChecked(&w[1], r.PromptTokens) || !addChecked(&w[2], r.CompletionTokens) ||
			!addChecked(&w[3], r.PriceMicroSEK) {
			rej = append(rej, reject(r, c.raw, RejectOverflow, "the batch's daily sums for %s would leave the int64 range", r.AccountID))
			continue
		}
		*v = w
		accepted = append(accepted, *r)
	}
	return accepted, rej, nil
}

func insertRejections(ctx context.Context, tx pgx.Tx, nodeID, batchID string, rs []rejection) error {
	if len(rs) == 0 {
		return nil
	}
	fps, ids, accts, reasons, raws := make([]string, len(rs)), make([]string, len(rs)), make([]string, len(rs)),
		make([]string, len(rs)), make([]string, len(rs))
	for i, r := range rs {
		fps[i], ids[i], accts[i], reasons[i], raws[i] = r.fingerprint(), r.requestID, r.accountID, r.reason, r.storedRaw()
	}
	_, err := tx.Exec(ctx, `INSERT INTO rejected_records (fingerprint, request_id, account_id, node_id, batch_id, reason, raw)
		SELECT r.fp, r.request_id, r.account_id, $6, $7, r.reason, r.raw
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS r(fp, request_id, account_id, reason, raw)
		ORDER BY r.fp
		ON CONFLICT (fingerprint) DO NOTHING`, fps, ids, accts, reasons, raws, cleanText(clip(nodeID)), cleanText(clip(batchID)))
	if err != nil {
		return fmt.Errorf("store rejected records: %w", err)
	}
	return nil
}

type aggKey struct{ account, day, model string }

func aggKeyOf(r *usage.Record) aggKey {
	return aggKey{r.AccountID, r.TS.UTC().Format(time.DateOnly), r.Model}
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
		rows, err := tx.Query(ctx, `SELECT account_id FROM lock_balances($1)`, chargeAccounts)
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
		if c := strings.Compare(a.account, b.account); c != 0 {
			return c
		}
		return strings.Compare(a.ref, b.ref)
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
			d := deltas[a]
			if !addChecked(&d, amt) { // screen bounded every balance; this cannot happen
				rows.Close()
				return usage.Reply{}, fmt.Errorf("debits of %s overflow", a)
			}
			deltas[a] = d
		}
		if err := rows.Err(); err != nil {
			return usage.Reply{}, fmt.Errorf("insert debits: %w", err)
		}
	}

	// Daily aggregates in (account, day, model) order. screen bounded every sum.
	agg := map[aggKey]*[4]int64{}
	for i := range recs {
		r := &recs[i]
		if !inserted[r.RequestID] {
			continue
		}
		k := aggKeyOf(r)
		v := agg[k]
		if v == nil {
			v = new([4]int64)
			agg[k] = v
		}
		if !addChecked(&v[0], 1) || !addChecked(&v[1], r.PromptTokens) || !addChecked(&v[2], r.CompletionTokens) ||
			!addChecked(&v[3], r.PriceMicroSEK) {
			return usage.Reply{}, fmt.Errorf("daily usage of %s overflows", r.AccountID)
		}
	}
	if len(agg) > 0 {
		keys := make([]aggKey, 0, len(agg))
		for k := range agg {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b aggKey) int {
			if c := strings.Compare(a.account, b.account); c != 0 {
				return c
			}
			if c := strings.Compare(a.day, b.day); c != 0 {
				return c
			}
			return strings.Compare(a.model, b.model)
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
	if touched == nil {
		touched = []string{}
	}
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
