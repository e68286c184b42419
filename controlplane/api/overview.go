package api

import (
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/money"
)

// Thresholds of the overview.
const (
	overviewLowBalance = 50 * money.MicroPerSEK // accounts under 50 SEK are listed
	overviewSilent     = 2 * time.Minute        // nodes poll at least every long-poll wait
)

// overview is GET /admin/v1/overview.
func (s *server) overview(w http.ResponseWriter, r *http.Request) {
	o, err := s.cfg.Store.Overview(r.Context(), s.now(), overviewLowBalance, overviewSilent)
	if err != nil {
		s.storeError(w, r, err, "overview")
		return
	}
	out := adminapi.Overview{
		SpendTodayMicroSEK: o.SpendTodayMicroSEK, SpendTodaySEK: money.FormatSEK(o.SpendTodayMicroSEK),
		SpendMonthMicroSEK: o.SpendMonthMicroSEK, SpendMonthSEK: money.FormatSEK(o.SpendMonthMicroSEK),
		RequestsToday: o.RequestsToday, RequestsMonth: o.RequestsMonth, ResultsToday: o.ResultsToday,
		LowBalanceSEK: money.FormatSEK(overviewLowBalance), LowBalance: make([]adminapi.Account, len(o.LowBalance)),
		PendingSignups: o.PendingSignups, SilentAfterSeconds: int(overviewSilent / time.Second), SilentNodes: []string{},
		UnhealthyRoutes: map[string]string{},
	}
	for i, a := range o.LowBalance {
		out.LowBalance[i] = s.accountJSON(a)
	}
	for _, n := range o.SilentNodes {
		out.SilentNodes = append(out.SilentNodes, n.NodeID)
	}
	problems, err := s.routeProblems(r)
	if err != nil {
		s.storeError(w, r, err, "overview")
		return
	}
	breakers, err := s.cfg.Store.ListNodeBreakers(r.Context())
	if err != nil {
		s.storeError(w, r, err, "overview")
		return
	}
	say := map[string][]string{}
	for route, byNode := range problems {
		for node, p := range byNode {
			say[route] = append(say[route], p+" on "+node)
		}
	}
	for node, b := range breakers {
		for route, st := range b.States {
			say[route] = append(say[route], "breaker "+st+" on "+node)
		}
	}
	for route, parts := range say {
		sort.Strings(parts)
		out.UnhealthyRoutes[route] = strings.Join(parts, ", ")
	}
	writeJSON(w, http.StatusOK, out)
}
