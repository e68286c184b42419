package api

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/catalog"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

// reportRouteHealth stores the route problems and credential names a node sent with its
// snapshot poll; a node that sends no problems leaves its last report as it was. Failures
// are logged: serving matters more.
func (s *server) reportRouteHealth(r *http.Request, node string) {
	vals := r.Header.Values(internalapi.HeaderRouteProblems)
	if len(vals) != 1 {
		return
	}
	problems, ok := internalapi.ParseRouteProblems(vals[0])
	if !ok {
		s.log.Warn("node sent unreadable route problems", "node", node)
		return
	}
	var creds []string
	if cv := r.Header.Values(internalapi.HeaderCredentials); len(cv) == 1 {
		if creds, ok = internalapi.ParseCredentials(cv[0]); !ok {
			s.log.Warn("node sent unreadable credential names", "node", node)
			creds = nil
		}
	}
	if err := s.cfg.Store.ReportRouteHealth(r.Context(), node, problems, creds); err != nil {
		s.log.Warn("record node route health", "node", node, "err", err)
	}
}

// addRouteHealth fills in each node's last route health report.
func (s *server) addRouteHealth(r *http.Request, nodes []adminapi.Node) error {
	reports, err := s.cfg.Store.ListNodeRouteHealth(r.Context())
	if err != nil {
		return err
	}
	for i := range nodes {
		if h, ok := reports[nodes[i].NodeID]; ok {
			at := h.ReportedAt
			nodes[i].RouteProblems, nodes[i].Credentials, nodes[i].RouteHealthReportedAt = h.Problems, h.Credentials, &at
		}
	}
	return nil
}

// routeProblems returns, per route ID, the problem each node that reported within the last
// day has with it (node ID to problem).
func (s *server) routeProblems(r *http.Request) (map[string]map[string]string, error) {
	reports, err := s.cfg.Store.ListNodeRouteHealth(r.Context())
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	for node, h := range reports {
		if time.Since(h.ReportedAt) > 24*time.Hour {
			continue
		}
		for route, p := range h.Problems {
			if out[route] == nil {
				out[route] = map[string]string{}
			}
			out[route][node] = p
		}
	}
	return out, nil
}

// catalogueWarnings names what would keep nodes from using the catalogue's routes: a
// credential variable that nodes which reported their credentials within the last day do
// not have, and problems nodes report with routes of the same ID now.
func (s *server) catalogueWarnings(r *http.Request, c *catalog.Catalog) ([]string, error) {
	reports, err := s.cfg.Store.ListNodeRouteHealth(r.Context())
	if err != nil {
		return nil, err
	}
	var warnings []string
	for _, m := range c.Models {
		for _, rt := range m.Routes {
			name, _ := snapshot.ParseCredentialsRef(rt.CredentialsRef)
			var lacking, troubled []string
			for node, h := range reports {
				if time.Since(h.ReportedAt) > 24*time.Hour {
					continue
				}
				if name != "" && h.Credentials != nil && !slices.Contains(h.Credentials, name) {
					lacking = append(lacking, node)
				} else if p := h.Problems[rt.ID]; p != "" && p != internalapi.ProblemCredentialMissing {
					troubled = append(troubled, node+" ("+p+")")
				}
			}
			sort.Strings(lacking)
			sort.Strings(troubled)
			if len(lacking) > 0 {
				warnings = append(warnings, fmt.Sprintf("route %s: credentials_ref %s is not set on %s, which cannot use the route until it is (add it to the node's environment or --credentials-file)",
					rt.ID, rt.CredentialsRef, nodeList(lacking)))
			}
			if len(troubled) > 0 {
				warnings = append(warnings, fmt.Sprintf("route %s: %s cannot use it now", rt.ID, nodeList(troubled)))
			}
		}
	}
	return warnings, nil
}

func nodeList(nodes []string) string {
	if len(nodes) == 1 {
		return "node " + nodes[0]
	}
	return "nodes " + strings.Join(nodes, ", ")
}
