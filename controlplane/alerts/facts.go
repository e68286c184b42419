package alerts

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sekgate/gateway/controlplane/store"
)

// facts returns the subjects for which rule r's condition holds now.
func (e *Evaluator) facts(ctx context.Context, r store.AlertRule) ([]store.AlertFact, error) {
	switch r.Kind {
	case store.AlertBalanceBelow:
		return e.cfg.Store.LowBalances(ctx, r.AccountID, r.Threshold)
	case store.AlertBudgetUsedAbove:
		return e.cfg.Store.BudgetsUsedAbove(ctx, r.AccountID, r.Threshold)
	case store.AlertRouteProblem:
		return e.routeProblems(ctx)
	case store.AlertSpoolAgeAbove, store.AlertNodeSilent:
		return e.nodeFacts(ctx, r)
	}
	return nil, fmt.Errorf("unknown alert kind %q", r.Kind)
}

// nodeFacts is the nodes whose spool age, or whose silence, exceeds the threshold.
func (e *Evaluator) nodeFacts(ctx context.Context, r store.AlertRule) ([]store.AlertFact, error) {
	nodes, err := e.cfg.Store.ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	limit := time.Duration(r.Threshold) * time.Millisecond
	now := e.cfg.Now()
	var out []store.AlertFact
	for _, n := range nodes {
		switch r.Kind {
		case store.AlertSpoolAgeAbove:
			if n.SpoolAge > limit {
				out = append(out, store.AlertFact{Subject: n.NodeID, Value: n.SpoolAge.Milliseconds(),
					Detail: fmt.Sprintf("The oldest usage record node %s has not delivered waited %s (reported %s).", n.NodeID, n.SpoolAge.Round(time.Second), n.SpoolReportedAt.UTC().Format(time.RFC3339))})
			}
		case store.AlertNodeSilent:
			if quiet := now.Sub(n.LastSeen); quiet > limit {
				out = append(out, store.AlertFact{Subject: n.NodeID, Value: quiet.Milliseconds(),
					Detail: fmt.Sprintf("Node %s was last heard from %s ago (%s).", n.NodeID, quiet.Round(time.Second), n.LastSeen.UTC().Format(time.RFC3339))})
			}
		}
	}
	return out, nil
}

// routeProblems is the routes that a node, in a report of the last ReportWindow, has an
// open breaker for or cannot use.
func (e *Evaluator) routeProblems(ctx context.Context) ([]store.AlertFact, error) {
	breakers, err := e.cfg.Store.ListNodeBreakers(ctx)
	if err != nil {
		return nil, err
	}
	health, err := e.cfg.Store.ListNodeRouteHealth(ctx)
	if err != nil {
		return nil, err
	}
	since := e.cfg.Now().Add(-e.cfg.ReportWindow)
	problems := map[string][]string{} // route to "node: problem"
	for node, b := range breakers {
		if b.ReportedAt.Before(since) {
			continue
		}
		for route, state := range b.States {
			if state == "open" {
				problems[route] = append(problems[route], node+": breaker open")
			}
		}
	}
	for node, h := range health {
		if h.ReportedAt.Before(since) {
			continue
		}
		for route, p := range h.Problems {
			problems[route] = append(problems[route], node+": "+p)
		}
	}
	out := make([]store.AlertFact, 0, len(problems))
	for route, ps := range problems {
		slices.Sort(ps)
		out = append(out, store.AlertFact{Subject: route, Value: int64(len(ps)),
			Detail: fmt.Sprintf("Route %s has problems on %d node(s): %s.", route, len(ps), strings.Join(ps, "; "))})
	}
	slices.SortFunc(out, func(a, b store.AlertFact) int { return strings.Compare(a.Subject, b.Subject) })
	return out, nil
}
