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
