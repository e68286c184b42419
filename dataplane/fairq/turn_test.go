package fairq

import (
	"context"
	"math"
	"testing"
	"time"
)

// Turns split the slots of the same reports between the nodes: every slot is one node's,
// each node's place moves on every TurnEvery, and a report read before the current order
// began gives none.
func TestFleetTurns(t *testing.T) {
	// An order in which rank 1 comes first: a whole number of three TurnEvery.
	cycle := 3 * int64(TurnEvery)
	start := time.Unix(0, time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC).UnixNano()/cycle*cycle)
	fresh := start.UnixNano()
	for _, tc := range []struct {
		name   string
		count  float64
		at     time.Time
		readAt int64
		want   [3]int64 // ranks 1, 2, 3
	}{
		{"one slot: the first place's", 1, start, fresh, [3]int64{1, 0, 0}},
		{"one slot, next order: the next node's", 1, start.Add(TurnEvery), fresh + int64(TurnEvery), [3]int64{0, 0, 1}},
		{"four slots", 4, start, fresh, [3]int64{2, 1, 1}},
		{"a part of a slot counts whole", 2.5, start, fresh, [3]int64{1, 1, 1}},
		{"none", 0, start, fresh, [3]int64{0, 0, 0}},
		{"report older than the order", 4, start.Add(TurnEvery), fresh, [3]int64{0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [3]int64
			for rank := int64(1); rank <= 3; rank++ {
				tn := TurnAt(3, rank, tc.at)
				got[rank-1] = tn.Count(tc.count, tc.readAt)
				mine := int64(0)
				for i := range int64(8) {
					if float64(i) < math.Ceil(tc.count) && tn.Mine(i, tc.readAt) {
						mine++
					}
				}
				if mine != got[rank-1] {
					t.Fatalf("rank %d: Count %d, Mine of slots 0..%v gives %d", rank, got[rank-1], tc.count, mine)
				}
			}
			if got != tc.want {
				t.Fatalf("turns of ranks 1..3: %v, want %v", got, tc.want)
			}
		})
	}
}

// Three nodes holding a heavy account's requests let them go on the same reports only on
// their own turns: with one slot beyond the others' reserve, one node's request goes and
// the other two wait. A request that arrives to an empty queue is not held to turns.
func TestHeldHeavyGoesOnItsTurn(t *testing.T) {
	const capacity = 16
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	readAt := now.UnixNano()
	// The servers showed 3 free slots: the headroom of 2 and one more, beyond their last
	// free ones; no node has started anything since.
	space := Space{Free: 1, Spare: 1.0 / 3, Capacity: capacity, Reported: 3, ReportedAt: readAt, Split: 3}
	granted := 0
	for rank := 1; rank <= 3; rank++ {
		q := New(Config{Now: func() time.Time { return now }, Poll: time.Hour})
		a := q.Flow("a", 1)
		q.Flow("b", 1)
		q.SetFleet(Fleet{Others: map[string]int64{"a": 12}, Weights: map[string]int64{"a": 1, "b": 1}, Nodes: 3, Rank: rank, TTL: time.Minute})
		q.refresh(now)
		mine := space
		mine.SpareTurns = 0
		if TurnAt(3, int64(rank), now).Mine(0, readAt) {
			mine.SpareTurns = 1
		}
		if !q.Admit(a, mine) {
			t.Fatalf("rank %d: an arrival to an empty queue was held to turns", rank)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		if g, err := q.Wait(ctx, a, "standard", func() Space { return mine }); err == nil {
			granted++
			if !g.Turns {
				t.Fatalf("rank %d: let go from the queue but not on turns", rank)
			}
		}
		cancel()
	}
	if granted != 1 {
		t.Fatalf("%d of 3 nodes let the heavy account's request go on the same reports, want 1", granted)
	}
}
