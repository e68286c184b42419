package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
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
// Accepted records are inserted plainly first; if one of them was stored before, that
// insert fails and the batch is applied again with ON CONFLICT (request_id) DO NOTHING, so
// either way only records new to the table count: they are added to the daily per-model aggregates (numeric, so they
// cannot overflow), and each account is debited once per batch, the sum of its new
// records' prices (the records are the proof of each charge; exactly-once rests on their
// request IDs); they are added to the per-minute series too (series_add.go). All row locks
// are taken in a fixed order (accounts, then request IDs, then aggregate keys, then keys'
// last use, then series rows, then the ledger clock), so concurrent batches, from
// one control plane or several on one database, cannot deadlock. The reply carries the
// balances of every account the batch's accepted records mention.
//
// A record whose request ID falls in a day of the records without a partition (dropped by
// retention, or further ahead than the partitions made; record_days.go) is refused the
// same way. Records whose account does not exist are stored but not charged (and logged).
func (s *Store) IngestBatch(ctx context.Context, b usage.Batch) (usage.Reply, error) {
	return s.ingest(ctx, b.NodeID, b.BatchID, b.Records, nil, nil)
}

// IngestRaw is IngestBatch for records as a node sent them: each is decoded on its own, so
// one that does not decode is rejected (RejectUndecodable) instead of failing the batch,
// and rejections keep the record's bytes. Each raw must be one valid JSON value, as
// encoding/json's json.RawMessage and the API's batch reader (which validates the whole
// body) hand out: it is not validated again.
func (s *Store) IngestRaw(ctx context.Context, nodeID, batchID string, raws []json.RawMessage) (usage.Reply, error) {
	recs := make([]usage.Record, 0, len(raws))
	rawOf := make([][]byte, 0, len(raws))
	var bad []rejection
	for _, raw := range raws {
		r, err := usage.DecodeValidRecord(raw)
		if err != nil {
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
		if code, detail := checkRecord(r, now, s.cfg.RecordRetention); code != "" {
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
	wait, leave, err := s.gate.enter(ctx)
	if err != nil {
		s.cfg.Metrics.BatchIngested(IngestStats{Records: total, Wait: wait, Err: err})
		return usage.Reply{}, fmt.Errorf("ingest batch %q from %q: wait for an ingest slot: %w", batchID, nodeID, err)
	}
	start := time.Now()
	// First as if no record of the batch was stored before (a plain insert, the usual
	// case); if one was (a resent batch, or records of an earlier one), the insert fails and
	// the batch is applied again, skipping the stored records.
	skipStored := false
	apply := func(tx pgx.Tx) error {
		placed, bad, err := s.placeRecords(ctx, tx, cands, bad)
		if err != nil {
			return err
		}
		accepted, rej, err := s.screen(ctx, tx, placed, bad)
		if err != nil {
			return err
		}
		if err := insertRejections(ctx, tx, nodeID, batchID, rej); err != nil {
			return err
		}
		reply, err = s.applyBatch(ctx, tx, nodeID, batchID, accepted, skipStored)
		if isNoPartition(err) {
			s.parts.Store(nil) // a partition was dropped meanwhile: read them again and retry
		}
		rejected = rej
		return err
	}
	err = s.retryTx(ctx, apply)
	if isStoredRecord(err) {
		skipStored = true
		err = s.retryTx(ctx, apply)
	}
	took := time.Since(start)
	leave()
	if err != nil {
		s.cfg.Metrics.BatchIngested(IngestStats{Records: total, Wait: wait, Duration: took, Err: err})
		return usage.Reply{}, fmt.Errorf("ingest batch %q from %q: %w", batchID, nodeID, err)
	}
	s.noteRejections(nodeID, batchID, rejected)
	reply.BatchID = batchID
	reply.Rejected = len(rejected)
	reply.Duplicates = total - reply.Inserted - len(rejected)
	s.cfg.Metrics.BatchIngested(IngestStats{Records: total, Inserted: reply.Inserted, Duplicates: reply.Duplicates,
		Rejected: rejectedByCode(rejected), Wait: wait, Duration: took})
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
