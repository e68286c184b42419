package routing

import (
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/fairq"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/loadstat"
)

// turnsFleet is node rank of three, reading at at reports from at of four routes of 4
// slots with 2, 3, 2 and 3 free (1, 2, 1 and 2 beyond the last).
func turnsFleet(rank int, at int64) (*Selector, []index.Candidate) {
	cands := fourRoutes()[:4]
	s := &Selector{Loads: loadstat.NewRegistry(), Place: func() (int, int) { return 3, rank }}
	for i, c := range cands {
		r := s.Loads.For(c.Route)
		r.SetServer(loadstat.Report{Waiting: 1, Running: 4, KV: -1}, at, 0) // capacity 4
		r.SetServer(loadstat.Report{Running: int64(2 - i%2), KV: -1}, at, 0)
	}
	return s, cands
}

// Three nodes acting on the same reports take the slots beyond each server's last in
// turns: together as many as one node alone, each slot one node's, spread over the
// servers; a report read before the order of turns began gives none.
func TestTurnSlots(t *testing.T) {
	total := 0.0
	perRoute := make([]float64, 4)
	for rank := 1; rank <= 3; rank++ {
		s, cands := turnsFleet(rank, t0)
		sp := s.Room(cands, t0)
		var views [maxScored]loadstat.View
		for i, c := range cands {
			views[i] = s.Loads.For(c.Route).View(t0, s.Loads.FreshFor)
		}
		var turns [maxScored]float64
		if !s.turnSlots(cands, views[:4], t0, turns[:4]) {
			t.Fatalf("rank %d of 3: takes no turns", rank)
		}
		for i := range cands {
			perRoute[i] += turns[i]
		}
		if sp.SpareTurns < 1 || sp.Reported != 10 {
			t.Fatalf("rank %d: %v turns of %v reported free, want at least one of 10", rank, sp.SpareTurns, sp.Reported)
		}
		total += sp.SpareTurns
	}
	if total != 6 {
		t.Fatalf("the nodes' turns add up to %v slots beyond the last, want 6", total)
	}
	for i, want := range []float64{1, 2, 1, 2} {
		if perRoute[i] != want {
			t.Fatalf("route %d: %v turns in all, want %v (the slots beyond its last)", i, perRoute[i], want)
		}
	}
	// Reports read just before the order of turns began: the slots may be gone.
	later := t0 + int64(fairq.TurnEvery)
	s, cands := turnsFleet(1, later-int64(time.Millisecond))
	if sp := s.Room(cands, later); sp.SpareTurns != 0 {
		t.Fatalf("reports older than the order: %v turns, want none", sp.SpareTurns)
	}
	// Alone, or without its place, a node takes no turns.
	s, cands = turnsFleet(0, t0)
	if sp := s.Room(cands, t0); sp.SpareTurns == sp.SpareTurns {
		t.Fatalf("rank unknown: %v turns, want none taken (NaN)", sp.SpareTurns)
	}
}

// A heavy request on turns goes to a route where the node has one, even when another
// has more slots free.
func TestHeavyOnTurnsGoesWhereItsTurnIs(t *testing.T) {
	for rank := 1; rank <= 3; rank++ {
		s, cands := turnsFleet(rank, t0)
		var views [maxScored]loadstat.View
		for i, c := range cands {
			views[i] = s.Loads.For(c.Route).View(t0, s.Loads.FreshFor)
		}
		var turns [maxScored]float64
		s.turnSlots(cands, views[:4], t0, turns[:4])
		plan, _ := s.Order(nil, cands, Request{Mode: ModeScored, Now: t0, Held: true, Heavy: true, Turns: true})
		first := -1
		for i, c := range cands {
			if c.Route == plan[0].Route {
				first = i
			}
		}
		if turns[first] < 1 {
			t.Fatalf("rank %d: sent to %s, where it has no turn (turns %v)", rank, plan[0].Route.ID, turns[:4])
		}
	}
}

// A node's turns are less its own starts since the report only: another node's start
// heard on the start feed (while not every node is heard) took one of that node's turns,
// not this one's.
func TestTurnSlotsCountOwnStartsOnly(t *testing.T) {
	for rank := 1; rank <= 3; rank++ {
		s, cands := turnsFleet(rank, t0)
		turnsOf := func() [maxScored]float64 {
			var views [maxScored]loadstat.View
			for i, c := range cands {
				views[i] = s.Loads.For(c.Route).View(t0, s.Loads.FreshFor)
			}
			var turns [maxScored]float64
			if !s.turnSlots(cands, views[:4], t0, turns[:4]) {
				t.Fatalf("rank %d of 3: takes no turns", rank)
			}
			return turns
		}
		before := turnsOf()
		for _, c := range cands {
			s.Loads.Heard(s.Loads.For(c.Route).IDHash, 1)
		}
		if after := turnsOf(); after != before {
			t.Fatalf("rank %d: turns %v after other nodes' starts, want %v", rank, after[:4], before[:4])
		}
	}
}
