package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Node is a data-plane node as last seen by the control plane.
type Node struct {
	NodeID         string
	AppliedVersion int64
	LastSeen       time.Time
	Region         string // the region name the node reported (empty: none)
	// SpoolAge is the age of the oldest record in the node's usage spool as the node last
	// reported it, at SpoolReportedAt (zero: never reported).
	SpoolAge        time.Duration
	SpoolReportedAt time.Time
}

// TouchNode records that a node polled, acknowledging the snapshot version it applied,
// the region name it reported and, unless spoolAge is negative (not reported), the age of
// its spool's oldest record.
func (s *Store) TouchNode(ctx context.Context, nodeID string, applied int64, region string, spoolAge time.Duration) error {
	now := s.now()
	var age *int64
	var at *time.Time
	if spoolAge >= 0 {
		ms := spoolAge.Milliseconds()
		age, at = &ms, &now
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO nodes (node_id, applied_version, last_seen, region, spool_age_ms, spool_reported_at)
		VALUES ($1, $2, $3, $4, COALESCE($5, 0), $6)
		ON CONFLICT (node_id) DO UPDATE SET applied_version = EXCLUDED.applied_version, last_seen = EXCLUDED.last_seen,
			region = EXCLUDED.region,
			spool_age_ms = COALESCE($5, nodes.spool_age_ms), spool_reported_at = COALESCE($6, nodes.spool_reported_at)`,
		nodeID, applied, now, region, age, at)
	return translate(err, "touch node "+nodeID)
}

// ReportSpoolAge records the spool age a known node reported with a usage batch or a
// balance poll; a node that never polled for a snapshot is not created.
func (s *Store) ReportSpoolAge(ctx context.Context, nodeID string, spoolAge time.Duration) error {
	_, err := s.pool.Exec(ctx, `UPDATE nodes SET spool_age_ms = $2, spool_reported_at = $3 WHERE node_id = $1`,
		nodeID, max(spoolAge, 0).Milliseconds(), s.now())
	return translate(err, "report spool age of "+nodeID)
}

// ListNodes returns the known nodes sorted by ID.
func (s *Store) ListNodes(ctx context.Context) ([]Node, error) {
	rows, err := s.pool.Query(ctx, `SELECT node_id, applied_version, last_seen, region, spool_age_ms, spool_reported_at
		FROM nodes ORDER BY node_id`)
	if err != nil {
		return nil, translate(err, "list nodes")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Node, error) {
		var n Node
		var ms int64
		var at *time.Time
		err := r.Scan(&n.NodeID, &n.AppliedVersion, &n.LastSeen, &n.Region, &ms, &at)
		n.SpoolAge = time.Duration(ms) * time.Millisecond
		if at != nil {
			n.SpoolReportedAt = *at
		}
		return n, err
	})
	if out == nil {
		out = []Node{}
	}
	return out, translate(err, "list nodes")
}
