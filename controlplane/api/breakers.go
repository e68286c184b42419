package api

import (
	"net/http"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/internalapi"
)

// reportBreakers stores the breaker states a node sent with its snapshot poll
// (internalapi.HeaderBreakers); a node that sends none, or a value that does not parse,
// leaves its last report as it was. Failures are logged: serving matters more.
func (s *server) reportBreakers(r *http.Request, node string) {
	vals := r.Header.Values(internalapi.HeaderBreakers)
	if len(vals) != 1 {
		return
	}
	states, ok := internalapi.ParseBreakers(vals[0])
	if !ok {
		s.log.Warn("node sent unreadable breaker states", "node", node)
		return
	}
	if err := s.cfg.Store.ReportBreakers(r.Context(), node, states); err != nil {
		s.log.Warn("record node breakers", "node", node, "err", err)
	}
}

// addBreakers fills in each node's last breaker report.
func (s *server) addBreakers(r *http.Request, nodes []adminapi.Node) error {
	reports, err := s.cfg.Store.ListNodeBreakers(r.Context())
	if err != nil {
		return err
	}
	for i := range nodes {
		if b, ok := reports[nodes[i].NodeID]; ok {
			at := b.ReportedAt
			nodes[i].Breakers, nodes[i].BreakersReportedAt = b.States, &at
		}
	}
	return nil
}
