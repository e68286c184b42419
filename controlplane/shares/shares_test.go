package shares

import (
	"math"
	"testing"
	"time"

	"github.com/sekgate/gateway/shared/internalapi"
)

func TestShare(t *testing.T) {
	cases := []struct {
		name     string
		d, total float64
		nodes    int
		eps      float64
		want     float64
	}{
		{"round robin over 3", 15, 45, 3, 1, 1.0 / 3},
		{"uneven: the busy node", 30, 45, 3, 1, 31.0 / 48},
		{"uneven: the quiet node", 0, 45, 3, 1, 1.0 / 48},
		{"idle fleet shares equally", 0, 0, 4, 1, 0.25},
		{"alone", 7, 7, 1, 1, 1},
		{"small demand is not shut out", 0.1, 1.1, 2, 1, 1.1 / 3.1},
		{"no nodes counts as one", 5, 5, 0, 1, 1},
	}
	for _, c := range cases {
		if got := Share(c.d, c.total, c.nodes, c.eps); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: share %v, want %v", c.name, got, c.want)
		}
	}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func demand(id string, n int64) []internalapi.FleetDemand {
	return []internalapi.FleetDemand{{ID: id, Attempts: n}}
}

func report(accts []internalapi.FleetDemand) internalapi.FleetReport {
	return internalapi.FleetReport{IntervalMs: 1000, WindowMs: 1000, Accounts: accts}
}

// TestTableSharesSumToOne: the shares the nodes of a fleet get for one account sum to 1
// and follow their demand; nodes that stop reporting drop out after three intervals and
// new ones count from their first report.
func TestTableSharesSumToOne(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	tb := New(Config{Now: c.now})
	loads := map[string]int64{"n1": 30, "n2": 10, "n3": 5}
	round := func() map[string]internalapi.FleetAnswer {
		out := map[string]internalapi.FleetAnswer{}
		for id, n := range loads {
			out[id] = tb.Report(id, report(demand("acct", n)))
		}
		// A second pass sees every node's fresh report.
		for id, n := range loads {
			out[id] = tb.Report(id, report(demand("acct", n)))
		}
		c.t = c.t.Add(time.Second)
		return out
	}
	check := func(ans map[string]internalapi.FleetAnswer) {
		t.Helper()
		sum, total := 0.0, 0.0
		for _, n := range loads {
			total += float64(n)
		}
		for id, a := range ans {
			if a.Nodes != len(loads) {
				t.Errorf("%s: %d nodes, want %d", id, a.Nodes, len(loads))
			}
			want := Share(float64(loads[id]), total, len(loads), DefaultEpsilon)
			if got := a.Accounts["acct"]; math.Abs(got-want) > 1e-9 {
				t.Errorf("%s: share %v, want %v", id, got, want)
			}
			sum += a.Accounts["acct"]
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("shares sum to %v", sum)
		}
	}
	check(round())
	loads["n4"], loads["n5"] = 20, 20 // 3 → 5 nodes
	check(round())
	delete(loads, "n1")
	delete(loads, "n2")
	delete(loads, "n3")
	// n1..n3 are silent: still counted within three intervals, gone after.
	c.t = c.t.Add(2 * time.Second)
	if a := tb.Report("n4", report(demand("acct", 20))); a.Nodes != 5 {
		t.Fatalf("silent nodes dropped before three intervals: %d nodes", a.Nodes)
	}
	c.t = c.t.Add(1500 * time.Millisecond)
	check(round()) // 5 → 2 nodes
	modes := tb.Modes()
	if modes["n1"].Mode != "fallback" || modes["n4"].Mode != "shared" || modes["n4"].Nodes != 2 {
		t.Errorf("modes %+v", modes)
	}
	c.t = c.t.Add(forgetAfter + time.Second)
	tb.Report("n4", report(nil))
	if _, ok := tb.Modes()["n1"]; ok {
		t.Error("a node silent for ten minutes is still listed")
	}
}

// TestTableCapacityAndModes: the fleet's capacity per route is the largest a live node
// learned; a node that says it was in its fallback is listed so.
func TestTableCapacityAndModes(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	tb := New(Config{Now: c.now})
	tb.Report("a", internalapi.FleetReport{IntervalMs: 1000, Routes: []internalapi.RouteSlots{{RouteID: "r1", Slots: 8}, {RouteID: "r2", Slots: 0}}})
	c.t = c.t.Add(2 * time.Second)
	ans := tb.Report("b", internalapi.FleetReport{IntervalMs: 1000, Fallback: true, Routes: []internalapi.RouteSlots{{RouteID: "r1", Slots: 6}}})
	if ans.Routes["r1"] != 8 || len(ans.Routes) != 1 || ans.Nodes != 2 || ans.Accounts != nil {
		t.Fatalf("answer %+v", ans)
	}
	c.t = c.t.Add(1500 * time.Millisecond) // a is 3.5 intervals old
	ans = tb.Report("b", internalapi.FleetReport{IntervalMs: 1000, Routes: []internalapi.RouteSlots{{RouteID: "r1", Slots: 6}}})
	if ans.Routes["r1"] != 6 || ans.Nodes != 1 {
		t.Fatalf("a's capacity outlived a: %+v", ans)
	}
	tb.Report("c", internalapi.FleetReport{IntervalMs: 1000, Fallback: true})
	if m := tb.Modes(); m["a"].Mode != "fallback" || m["b"].Mode != "shared" || m["c"].Mode != "fallback" {
		t.Fatalf("modes %+v", m)
	}
}

// TestPlacementsHandedOn: a node gets the others' placements since its last answer, never
// its own, warm ones only, with their age; a sequence from before a restart starts over.
func TestPlacementsHandedOn(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)}
	tb := New(Config{Now: c.now})
	rep := func(ps []internalapi.Placement, since uint64) internalapi.FleetReport {
		return internalapi.FleetReport{IntervalMs: 1000, WindowMs: 1000, Placements: ps, PlacementsSince: since}
	}
	a := tb.Report("a", rep([]internalapi.Placement{{Key: 1, Tag: 7, AgoMs: 200}, {Key: 2, Tag: 8, AgoMs: int64(6 * time.Minute / time.Millisecond)}}, 0))
	if len(a.Placements) != 0 || a.PlacementSeq != 2 {
		t.Fatalf("a's own placements handed back: %+v", a)
	}
	c.t = c.t.Add(time.Second)
	b := tb.Report("b", rep([]internalapi.Placement{{Key: 3, Tag: 9}}, 0))
	if len(b.Placements) != 1 || b.Placements[0].Key != 1 || b.Placements[0].AgoMs != 1200 || b.PlacementSeq != 3 {
		t.Fatalf("b got %+v, want key 1 only (key 2 is cold), 1.2 s old", b)
	}
	c.t = c.t.Add(time.Second)
	a = tb.Report("a", rep(nil, a.PlacementSeq))
	if len(a.Placements) != 1 || a.Placements[0].Key != 3 {
		t.Fatalf("a got %+v, want b's key 3", a)
	}
	b = tb.Report("b", rep(nil, b.PlacementSeq))
	if len(b.Placements) != 0 {
		t.Fatalf("b got %+v again", b.Placements)
	}
	if restarted := tb.Report("b", rep(nil, 99)); len(restarted.Placements) != 1 {
		t.Fatalf("a sequence from before a restart: %+v", restarted)
	}
}

// TestRanks: each live node learns its place in the order of their IDs, 1 to the number
// of live nodes, the same order in every answer; a node gone silent leaves the order.
func TestRanks(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	tb := New(Config{Now: c.now})
	for _, id := range []string{"node-c", "node-a", "node-b"} {
		tb.Report(id, internalapi.FleetReport{IntervalMs: 1000})
	}
	for id, want := range map[string]int{"node-a": 1, "node-b": 2, "node-c": 3} {
		if a := tb.Report(id, internalapi.FleetReport{IntervalMs: 1000}); a.Rank != want || a.Nodes != 3 {
			t.Fatalf("%s: place %d of %d, want %d of 3", id, a.Rank, a.Nodes, want)
		}
	}
	c.t = c.t.Add(3500 * time.Millisecond) // all silent for 3.5 intervals: node-c reports, then node-b
	tb.Report("node-c", internalapi.FleetReport{IntervalMs: 1000})
	if a := tb.Report("node-b", internalapi.FleetReport{IntervalMs: 1000}); a.Rank != 1 || a.Nodes != 2 {
		t.Fatalf("node-b after node-a left: place %d of %d, want 1 of 2", a.Rank, a.Nodes)
	}
}

// TestRegionRanks: each node also learns the live nodes of its own region and its place
// among them; the whole fleet's count and place stay the same.
func TestRegionRanks(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	tb := New(Config{Now: c.now})
	regions := map[string]string{"node-a": "se-sto", "node-b": "eu-fra", "node-c": "se-sto", "node-d": ""}
	for id, r := range regions {
		tb.Report(id, internalapi.FleetReport{IntervalMs: 1000, Region: r})
	}
	for _, tc := range []struct {
		id               string
		nodes, rank      int
		inRegion, rankIn int
	}{
		{"node-a", 4, 1, 2, 1},
		{"node-b", 4, 2, 1, 1},
		{"node-c", 4, 3, 2, 2},
		{"node-d", 4, 4, 1, 1},
	} {
		a := tb.Report(tc.id, internalapi.FleetReport{IntervalMs: 1000, Region: regions[tc.id]})
		if a.Nodes != tc.nodes || a.Rank != tc.rank || a.RegionNodes != tc.inRegion || a.RegionRank != tc.rankIn {
			t.Errorf("%s: %d of %d, %d of %d in its region; want %d of %d, %d of %d", tc.id,
				a.Rank, a.Nodes, a.RegionRank, a.RegionNodes, tc.rank, tc.nodes, tc.rankIn, tc.inRegion)
		}
	}
}
