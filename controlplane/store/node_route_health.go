package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// NodeRouteHealth is what a node last reported of the routes it cannot use and of the
// route credentials it has.
type NodeRouteHealth struct {
	// Problems maps the routes the node cannot use to the problem (internalapi.Problem*).
	Problems map[string]string
	// Credentials are the names of the route credentials the node has; nil when the node
	// did not report them.
	Credentials []string
	ReportedAt  time.Time
}

// ReportRouteHealth records what a known node reported with a snapshot poll; credentials
// nil leaves the names it reported before.
func (s *Store) ReportRouteHealth(ctx context.Context, nodeID string, problems map[string]string, credentials []string) error {
	if problems == nil {
		problems = map[string]string{}
	}
	b, err := json.Marshal(problems)
	if err != nil {
		return fmt.Errorf("report route health of %s: %w", nodeID, err)
	}
	_, err = s.pool.Exec(ctx, `UPDATE nodes SET route_problems = $2, credentials = COALESCE($3, credentials),
		route_health_reported_at = $4 WHERE node_id = $1`, nodeID, string(b), credentials, s.now())
	return translate(err, "report route health of "+nodeID)
}

// ListNodeRouteHealth returns, per node that ever reported it, its last route health report.
func (s *Store) ListNodeRouteHealth(ctx context.Context) (map[string]NodeRouteHealth, error) {
	rows, err := s.pool.Query(ctx, `SELECT node_id, route_problems, credentials, route_health_reported_at
		FROM nodes WHERE route_problems IS NOT NULL`)
	if err != nil {
		return nil, translate(err, "list node route health")
	}
	defer rows.Close()
	out := map[string]NodeRouteHealth{}
	for rows.Next() {
		var id string
		var raw []byte
		var creds []string
		var at time.Time
		if err := rows.Scan(&id, &raw, &creds, &at); err != nil {
			return nil, translate(err, "list node route health")
		}
		h := NodeRouteHealth{Credentials: creds, ReportedAt: at.UTC()}
		if err := json.Unmarshal(raw, &h.Problems); err != nil {
			return nil, fmt.Errorf("route problems of node %s: %w", id, err)
		}
		out[id] = h
	}
	return out, translate(rows.Err(), "list node route health")
}
