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
}

// TouchNode records that a node polled, acknowledging the snapshot version it applied,
// and the region name it reported.
func (s *Store) TouchNode(ctx context.Context, nodeID string, applied int64, region string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO nodes (node_id, applied_version, last_seen, region) VALUES ($1, $2, $3, $4)
		ON CONFLICT (node_id) DO UPDATE SET applied_version = EXCLUDED.applied_version, last_seen = EXCLUDED.last_seen,
			region = EXCLUDED.region`,
		nodeID, applied, s.now(), region)
	return translate(err, "touch node "+nodeID)
}

// ListNodes returns the known nodes sorted by ID.
func (s *Store) ListNodes(ctx context.Context) ([]Node, error) {
	rows, err := s.pool.Query(ctx, `SELECT node_id, applied_version, last_seen, region FROM nodes ORDER BY node_id`)
	if err != nil {
		return nil, translate(err, "list nodes")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Node, error) {
		var n Node
		err := r.Scan(&n.NodeID, &n.AppliedVersion, &n.LastSeen, &n.Region)
		return n, err
	})
	if out == nil {
		out = []Node{}
	}
	return out, translate(err, "list nodes")
}
