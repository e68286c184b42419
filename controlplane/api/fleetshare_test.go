package api_test

import (
	"math"
	"testing"

	"github.com/sekgate/gateway/shared/internalapi"
)

// TestFleetReportShares: nodes posting fleet reports get demand-proportional shares that
// sum to 1, the fleet's capacity per route, and are listed with their limits mode; a
// report that does not make sense is refused, one without node credentials is 401.
func TestFleetReportShares(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	post := func(node string, rep internalapi.FleetReport) resp {
		return e.do("POST", internalapi.PathFleet, nodeToken, rep, map[string]string{internalapi.HeaderNodeID: node})
	}
	rep := func(attempts int64, slots int64, fallback bool) internalapi.FleetReport {
		feed := "" // node-b has no start feed
		if !fallback {
			feed = internalapi.StartFeedLive
		}
		return internalapi.FleetReport{IntervalMs: 1000, WindowMs: 1000, Fallback: fallback, StartFeed: feed,
			Accounts: []internalapi.FleetDemand{{ID: "acct_1", Attempts: attempts, InFlight: 1}},
			Routes:   []internalapi.RouteSlots{{RouteID: "route_1", Slots: slots}}}
	}
	e.mustStatus(post("node-a", rep(30, 4, false)), 200)
	e.mustStatus(post("node-b", rep(15, 8, true)), 200)
	var a, b internalapi.FleetAnswer
	e.mustStatus(post("node-a", rep(30, 4, false)), 200).json(t, &a)
	e.mustStatus(post("node-b", rep(15, 8, true)), 200).json(t, &b)
	if a.Nodes != 2 || b.Nodes != 2 || a.Routes["route_1"] != 8 {
		t.Fatalf("answers %+v %+v", a, b)
	}
	if sa, sb := a.Accounts["acct_1"], b.Accounts["acct_1"]; math.Abs(sa+sb-1) > 1e-9 || math.Abs(sa-31.0/47) > 1e-9 {
		t.Fatalf("shares %v + %v", sa, sb)
	}
	var l struct {
		Data []struct {
			NodeID     string  `json:"node_id"`
			LimitsMode *string `json:"limits_mode"`
			StartFeed  *string `json:"start_feed"`
		}
	}
	// The nodes never polled a snapshot, so they are not in the node list; poll once.
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		e.do("GET", internalapi.PathSnapshot+"?wait=0", nodeToken, nil, map[string]string{internalapi.HeaderNodeID: n})
	}
	e.mustStatus(e.admin("GET", "/admin/v1/nodes", nil), 200).json(t, &l)
	modes, feeds := map[string]string{}, map[string]string{}
	for _, n := range l.Data {
		if n.LimitsMode != nil {
			modes[n.NodeID] = *n.LimitsMode
		}
		if n.StartFeed != nil {
			feeds[n.NodeID] = *n.StartFeed
		}
	}
	if modes["node-a"] != "shared" || modes["node-b"] != "fallback" || len(modes) != 2 {
		t.Fatalf("limits modes %v", modes)
	}
	if feeds["node-a"] != "live" || feeds["node-b"] != "off" || len(feeds) != 2 {
		t.Fatalf("start feeds %v", feeds)
	}
	for name, bad := range map[string]internalapi.FleetReport{
		"no interval":          {},
		"negative attempts":    {IntervalMs: 1000, Accounts: []internalapi.FleetDemand{{ID: "a", Attempts: -1}}},
		"empty ID":             {IntervalMs: 1000, Keys: []internalapi.FleetDemand{{Attempts: 1}}},
		"negative slots":       {IntervalMs: 1000, Routes: []internalapi.RouteSlots{{RouteID: "r", Slots: -1}}},
		"negative in flight":   {IntervalMs: 1000, Flows: []internalapi.FlowLoad{{Account: "a", InFlight: -1, Weight: 1}}},
		"flow without account": {IntervalMs: 1000, Flows: []internalapi.FlowLoad{{InFlight: 1, Weight: 1}}},
		"unknown feed state":   {IntervalMs: 1000, StartFeed: "maybe"},
	} {
		if r := post("node-a", bad); r.status != 400 {
			t.Errorf("%s: %d", name, r.status)
		}
	}
	if r := e.do("POST", internalapi.PathFleet, "", rep(1, 1, false), map[string]string{internalapi.HeaderNodeID: "node-a"}); r.status != 401 {
		t.Errorf("without a token: %d", r.status)
	}
}
