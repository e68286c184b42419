package routing

import (
	"testing"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/snapshot"
)

func cand(id string, prio, weight int) index.Candidate {
	return index.Candidate{Route: &index.Route{Route: snapshot.Route{ID: id, Priority: prio, Weight: weight}}}
}

func TestPickPriorityThenWeight(t *testing.T) {
	cands := []index.Candidate{cand("a", 0, 1), cand("b", 0, 3), cand("c", 1, 100)}
	counts := map[string]int{}
	var s Selector
	for range 4000 {
		c, ok := s.Pick(cands)
		if !ok {
			t.Fatal("no pick")
		}
		counts[c.Route.ID]++
	}
	if counts["c"] != 0 {
		t.Fatalf("lower-priority route picked %d times", counts["c"])
	}
	// Expect a:b about 1:3.
	if counts["b"] < 2*counts["a"] || counts["a"] < 500 {
		t.Fatalf("weights not honoured: %v", counts)
	}
}

func TestPickDeterministic(t *testing.T) {
	cands := []index.Candidate{cand("a", 0, 1), cand("b", 0, 3)}
	for draw, want := range map[int]string{0: "a", 1: "b", 3: "b"} {
		s := Selector{IntN: func(n int) int { return draw }}
		if c, _ := s.Pick(cands); c.Route.ID != want {
			t.Errorf("draw %d picked %s, want %s", draw, c.Route.ID, want)
		}
	}
	zero := []index.Candidate{cand("a", 0, 0), cand("b", 0, 0)}
	s := Selector{IntN: func(n int) int { return n - 1 }}
	if c, _ := s.Pick(zero); c.Route.ID != "b" {
		t.Errorf("zero weights: %s", c.Route.ID)
	}
	if _, ok := s.Pick(nil); ok {
		t.Error("picked from nothing")
	}
}

func TestPlanKeepsPriorityGroups(t *testing.T) {
	cands := []index.Candidate{cand("a", 0, 1), cand("b", 0, 1), cand("c", 2, 1), cand("d", 5, 0), cand("e", 5, 0)}
	var s Selector
	for range 100 {
		p := s.Plan(nil, cands)
		if len(p) != 5 {
			t.Fatalf("plan %d long", len(p))
		}
		set := func(i, j int) map[string]bool {
			m := map[string]bool{}
			for _, c := range p[i:j] {
				m[c.Route.ID] = true
			}
			return m
		}
		if g := set(0, 2); !g["a"] || !g["b"] {
			t.Fatalf("first group %v", p)
		}
		if p[2].Route.ID != "c" {
			t.Fatalf("middle %v", p)
		}
		if g := set(3, 5); !g["d"] || !g["e"] {
			t.Fatalf("last group %v", p)
		}
	}
}

func BenchmarkPick(b *testing.B) {
	cands := []index.Candidate{cand("a", 0, 1), cand("b", 0, 3), cand("c", 1, 100)}
	var s Selector
	b.ReportAllocs()
	for b.Loop() {
		s.Pick(cands)
	}
}
