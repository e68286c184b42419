package fairq

import (
	"reflect"
	"sort"
	"testing"
	"time"
)

// fleetQueue is a queue on a settable clock with flows a (2 in flight) and b (1), both
// active, and no headroom beyond the default 2.
func fleetQueue() (*Queue, *time.Time, *Flow, *Flow) {
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	q := New(Config{Now: func() time.Time { return now }})
	a, b := q.Flow("a", 1), q.Flow("b", 1)
	a.Start()
	a.Start()
	b.Start()
	q.refresh(now)
	return q, &now, a, b
}

// An account's requests in flight on the other nodes count with its own: with 2 here and
// 10 elsewhere it is above its share of 16 slots on this node too, and leaves the
// headroom; an account active only elsewhere shares the servers as well.
func TestFleetLoadMakesHeavy(t *testing.T) {
	const capacity = 16
	for _, tc := range []struct {
		name            string
		others, weights map[string]int64
		acct            string
		nodes           int
		free            float64 // this node's part of the servers' free slots
		want            bool
	}{
		{"no answer: a within its share", nil, nil, "a", 1, 2, true},
		{"a has 10 elsewhere: headroom kept", map[string]int64{"a": 10}, map[string]int64{"a": 1, "b": 1}, "a", 1, 2, false},
		{"a has 10 elsewhere: beyond headroom", map[string]int64{"a": 10}, map[string]int64{"a": 1, "b": 1}, "a", 1, 3, true},
		{"b light while a is heavy", map[string]int64{"a": 10}, map[string]int64{"a": 1, "b": 1}, "b", 1, 1, true},
		{"a has 5 elsewhere: within its half", map[string]int64{"a": 5}, map[string]int64{"a": 1, "b": 1}, "a", 1, 2, true},
		{"a has 5 elsewhere, c active elsewhere: over a third", map[string]int64{"a": 5, "c": 1},
			map[string]int64{"a": 1, "b": 1, "c": 1}, "a", 1, 2, false},
		// Three nodes keep the 2 slots of headroom together, each its third: a heavy
		// account starts while this node's part of the free slots (routing.Selector.Room)
		// is more than two thirds of a slot.
		{"3 nodes, 2 free in all", map[string]int64{"a": 10}, map[string]int64{"a": 1, "b": 1}, "a", 3, 2.0 / 3, false},
		{"3 nodes, 3 free in all", map[string]int64{"a": 10}, map[string]int64{"a": 1, "b": 1}, "a", 3, 3.0 / 3, true},
		{"3 nodes, light b, 1 free in all", map[string]int64{"a": 10}, map[string]int64{"a": 1, "b": 1}, "b", 3, 1.0 / 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, now, a, b := fleetQueue()
			q.SetFleet(Fleet{Others: tc.others, Weights: tc.weights, Nodes: tc.nodes, TTL: 3 * time.Second})
			q.refresh(*now)
			f := map[string]*Flow{"a": a, "b": b}[tc.acct]
			space := sp(tc.free, capacity)
			space.Split = float64(tc.nodes)
			if got := q.Admit(f, space); got != tc.want {
				t.Fatalf("Admit(%s, %v free of %d) = %v, want %v (active weight %d)",
					tc.acct, tc.free, capacity, got, tc.want, q.activeWeight.Load())
			}
		})
	}
}

// The other nodes' counts and this node's place hold until their time is up and then
// drop when no answer renewed them, the node count staying; an empty answer drops the
// counts at once.
func TestFleetCountsLapse(t *testing.T) {
	const capacity = 16
	q, now, a, _ := fleetQueue()
	interval := time.Second
	q.SetFleet(Fleet{Others: map[string]int64{"a": 10}, Weights: map[string]int64{"a": 1, "b": 1}, Nodes: 3, Rank: 2, TTL: 3 * interval})
	if n, r := q.Place(); n != 3 || r != 2 {
		t.Fatalf("place %d of %d, want 2 of 3", r, n)
	}
	*now = now.Add(3 * interval)
	q.refresh(*now)
	if q.Admit(a, sp(0.5, capacity)) {
		t.Fatal("within three intervals: the other nodes' 10 of a were forgotten")
	}
	*now = now.Add(time.Millisecond)
	q.refresh(*now)
	if !q.Admit(a, sp(0.5, capacity)) {
		t.Fatal("three intervals without an answer: the other nodes' counts still held")
	}
	if n, r := q.Place(); a.others.Load()+q.othersIn.Load() != 0 || n != 3 || r != 0 {
		t.Fatalf("others %d, place %d of %d after lapse, want none, no place, 3 nodes", a.others.Load()+q.othersIn.Load(), r, n)
	}

	q.SetFleet(Fleet{Others: map[string]int64{"a": 10}, Weights: map[string]int64{"a": 1, "b": 1}, TTL: 3 * interval})
	q.refresh(*now)
	if q.Admit(a, sp(0.5, capacity)) {
		t.Fatal("a fresh answer not applied")
	}
	q.SetFleet(Fleet{Nodes: 3, Rank: 1, TTL: 3 * interval}) // an idle fleet: no accounts
	if n, r := q.Place(); n != 3 || r != 1 || q.fleetUntil.Load() == 0 {
		t.Fatalf("an answer without accounts: place %d of %d, want 1 of 3 until it lapses", r, n)
	}
	q.SetFleet(Fleet{Nodes: 3}) // the exchange in fallback
	q.refresh(*now)
	if !q.Admit(a, sp(0.5, capacity)) || q.fleetUntil.Load() != 0 {
		t.Fatal("an empty answer left the other nodes' counts")
	}
	if n, r := q.Place(); n != 3 || r != 0 {
		t.Fatalf("fallback: place %d of %d, want none of 3", r, n)
	}
}

// What an account used on the other nodes lately and does not use now is reserved for it
// on this node too, even when it never sent a request here.
func TestFleetReserve(t *testing.T) {
	const capacity = 16
	q, now, a, _ := fleetQueue()
	weights := map[string]int64{"a": 1, "b": 1, "c": 1}
	for _, c := range []int64{2, 6} { // c's use elsewhere grows
		q.SetFleet(Fleet{Others: map[string]int64{"a": 10, "c": c}, Weights: weights, Nodes: 1, TTL: time.Minute})
		q.refresh(*now)
		*now = now.Add(time.Second)
	}
	q.SetFleet(Fleet{Others: map[string]int64{"a": 10}, Weights: weights, Nodes: 1, TTL: time.Minute})
	q.refresh(*now)
	// c's 6 (its share of 16 among three, rounded up) stay free of heavy a.
	if q.Admit(a, sp(6, capacity)) || !q.Admit(a, sp(7, capacity)) {
		t.Fatalf("a admitted with 6 free: %v, with 7: %v; want c's 6 kept", q.Admit(a, sp(6, capacity)), q.Admit(a, sp(7, capacity)))
	}
}

// Loads reports the node's own flows that are busy or lately seen, never the fleet's
// counts, and at most limit of them, the busiest.
func TestLoads(t *testing.T) {
	q, now, a, _ := fleetQueue()
	q.SetFleet(Fleet{Others: map[string]int64{"a": 10, "z": 4}, Weights: map[string]int64{"a": 1, "b": 1, "z": 2}, TTL: time.Minute})
	q.Flow("idle", 3)
	*now = now.Add(5 * time.Second) // past Linger: idle and b's seen no longer count
	a.Start()
	want := []FlowLoad{{"a", 3, 1}, {"b", 1, 1}}
	got := q.Loads(0)
	sortLoads(got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Loads = %v, want %v", got, want)
	}
	if got := q.Loads(1); !reflect.DeepEqual(got, want[:1]) {
		t.Fatalf("Loads(1) = %v, want %v", got, want[:1])
	}
}

func sortLoads(ls []FlowLoad) {
	sort.Slice(ls, func(i, j int) bool { return ls[i].Account < ls[j].Account })
}
