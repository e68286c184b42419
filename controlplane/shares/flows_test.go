package shares

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/sekgate/gateway/shared/internalapi"
)

func flowReport(fs ...internalapi.FlowLoad) internalapi.FleetReport {
	return internalapi.FleetReport{IntervalMs: 1000, WindowMs: 1000, Flows: fs}
}

// Each node is answered the other live nodes' requests in flight per account (never its
// own) and the weights of the accounts active on any live node; a silent node drops out.
func TestFleetFlows(t *testing.T) {
	reports := map[string]internalapi.FleetReport{
		"n1": flowReport(fl("burst", 10, 1), fl("quiet", 1, 1)),
		"n2": flowReport(fl("burst", 12, 1), fl("big", 0, 3)),
		"n3": flowReport(fl("burst", 9, 1), fl("quiet", 2, 1)),
	}
	weights := map[string]int64{"burst": 1, "quiet": 1, "big": 3}
	for _, tc := range []struct {
		node        string
		others      map[string]int64
		weights     map[string]int64
		silentNodes []string // not reporting for over three intervals
	}{
		{node: "n1", others: map[string]int64{"burst": 21, "quiet": 2}, weights: weights},
		{node: "n2", others: map[string]int64{"burst": 19, "quiet": 3}, weights: weights},
		{node: "n3", others: map[string]int64{"burst": 22, "quiet": 1}, weights: weights},
		{node: "n3", others: map[string]int64{"burst": 10, "quiet": 1}, silentNodes: []string{"n2"},
			weights: map[string]int64{"burst": 1, "quiet": 1}},
		{node: "n1", silentNodes: []string{"n2", "n3"}, weights: map[string]int64{"burst": 1, "quiet": 1}},
	} {
		c := &clock{t: time.Unix(1_800_000_000, 0)}
		tb := New(Config{Now: c.now})
		for _, id := range tc.silentNodes {
			tb.Report(id, reports[id])
		}
		c.t = c.t.Add(3*time.Second + time.Millisecond)
		for _, id := range []string{"n1", "n2", "n3"} {
			if !contains(tc.silentNodes, id) {
				tb.Report(id, reports[id])
			}
		}
		a := tb.Report(tc.node, reports[tc.node])
		if !reflect.DeepEqual(a.FlowsElsewhere, tc.others) {
			t.Errorf("%s, silent %v: elsewhere %v, want %v", tc.node, tc.silentNodes, a.FlowsElsewhere, tc.others)
		}
		if !reflect.DeepEqual(a.FlowWeights, tc.weights) {
			t.Errorf("%s, silent %v: weights %v, want %v", tc.node, tc.silentNodes, a.FlowWeights, tc.weights)
		}
	}
}

// A report's flows are bounded; an answer's maps too.
func TestFleetFlowsBounded(t *testing.T) {
	fs := make([]internalapi.FlowLoad, internalapi.MaxFleetFlows+5)
	for i := range fs {
		fs[i] = internalapi.FlowLoad{Account: fmt.Sprintf("acct%d", i), InFlight: 1, Weight: 1}
	}
	tb := New(Config{})
	tb.Report("n1", flowReport(fs...))
	a := tb.Report("n2", flowReport(internalapi.FlowLoad{Account: "mine", InFlight: 1, Weight: 1}))
	// The asker's own account may take one of the weights' places (the nodes are read in
	// no set order), and an account without a weight's place is not counted elsewhere.
	if n := len(a.FlowsElsewhere); n < internalapi.MaxFleetFlows-1 || n > internalapi.MaxFleetFlows ||
		len(a.FlowWeights) > internalapi.MaxFleetFlows {
		t.Fatalf("elsewhere %d, weights %d accounts, want at most %d", len(a.FlowsElsewhere), len(a.FlowWeights),
			internalapi.MaxFleetFlows)
	}
}

func fl(acct string, inFlight, weight int64) internalapi.FlowLoad {
	return internalapi.FlowLoad{Account: acct, InFlight: inFlight, Weight: weight}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
