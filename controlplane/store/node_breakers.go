package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// NodeBreakers is what a node last reported of its route breakers.
type NodeBreakers struct {
	// States maps the routes whose breaker was not closed to "open" or "half-open".
	States     map[string]string
	ReportedAt time.Time
}

// ReportBreakers records the breaker states a known node reported with a snapshot poll.
func (s *Store) ReportBreakers(ctx context.Context, nodeID string, states map[string]string) error {
	if states == nil {
		states = map[string]string{}
	}
	b, err := json.Marshal(states)
	if err != nil {
		return fmt.Errorf("report breakers of %s: %w", nodeID, err)
	}
	_, err = s.pool.Exec(ctx, `UPDATE nodes SET breakers = $2, breakers_reported_at = $3 WHERE node_id = $1`, nodeID, string(b), s.now())
	return translate(err, "report breakers of "+nodeID)
}

// ListNodeBreakers returns, per node that ever reported them, its last breaker report.
func (s *Store) ListNodeBreakers(ctx context.Context) (map[string]NodeBreakers, error) {
	rows, err := s.pool.Query(ctx, `SELECT node_id, breakers, breakers_reported_at FROM nodes WHERE breakers IS NOT NULL`)
	if err != nil {
		return nil, translate(err, "list node breakers")
	}
	defer rows.Close()
	out := map[string]NodeBreakers{}
	for rows.Next() {
		var id string
		var raw []byte
		var at time.Time
		if err := rows.Scan(&id, &raw, &at); err != nil {
			return nil, translate(err, "list node breakers")
		}
		nb := NodeBreakers{ReportedAt: at.UTC()}
		if err := json.Unmarshal(raw, &nb.States); err != nil {
			return nil, fmt.Errorf("breakers of node %s: %w", id, err)
		}
		out[id] = nb
	}
	return out, translate(rows.Err(), "list node breakers")
}
