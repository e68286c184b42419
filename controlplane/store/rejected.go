package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// RejectedRecord is a usage record the control plane refused (see IngestBatch).
type RejectedRecord struct {
	ID         int64
	RequestID  string
	AccountID  string
	NodeID     string
	BatchID    string
	Reason     string
	Raw        string // the record as the node sent it (cleaned, at most 16 KiB)
	ReceivedAt time.Time
}

// ListRejected returns the latest rejected records, newest first, at most limit (1 to
// 1000), and how many there are in all.
func (s *Store) ListRejected(ctx context.Context, limit int) ([]RejectedRecord, int64, error) {
	limit = max(1, min(limit, 1000))
	var total int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM rejected_records`).Scan(&total); err != nil {
		return nil, 0, translate(err, "count rejected records")
	}
	rows, err := s.pool.Query(ctx, `SELECT id, request_id, account_id, node_id, batch_id, reason, raw, received_at
		FROM rejected_records ORDER BY id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, 0, translate(err, "list rejected records")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RejectedRecord, error) {
		var x RejectedRecord
		err := r.Scan(&x.ID, &x.RequestID, &x.AccountID, &x.NodeID, &x.BatchID, &x.Reason, &x.Raw, &x.ReceivedAt)
		return x, err
	})
	if out == nil {
		out = []RejectedRecord{}
	}
	return out, total, translate(err, "list rejected records")
}

// DeleteRejectedBefore deletes up to batch rejected records received before cutoff,
// oldest first, and returns how many it deleted (retention keeps the table bounded).
func (s *Store) DeleteRejectedBefore(ctx context.Context, cutoff time.Time, batch int) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM rejected_records WHERE id IN (
		SELECT id FROM rejected_records WHERE received_at < $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)`, cutoff, batch)
	if err != nil {
		return 0, translate(err, "delete old rejected records")
	}
	return int(tag.RowsAffected()), nil
}
