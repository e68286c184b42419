package fairq

import (
	"math"
	"time"
)

// Turns in a fleet. Every node reads the same servers' reports, and an account above its
// share has requests waiting on every node behind the balancer: when a slot frees, each
// node lets one of them go on the same report, and together they take the slot beyond a
// server's last free one N times over, the last one with it. So a node lets a heavy
// account's waiting request go only on its own turns of what the reports show: the slots
// beyond each server's last free one, and the free slots beyond the others' reserve, each
// numbered alike by every node (routing.Selector.Room), slot i the turn of the node whose
// place is i mod N. The nodes' places come from the fleet exchange (their order by node
// ID) and rotate every TurnEvery, so each comes first in turn. A request that finds no one
// waiting on its node starts on the node's part of the free slots, as before: such
// requests arrive one at a time and seldom meet on one report, and splitting a few spare
// slots between the nodes would keep each waiting for the next report.

// TurnEvery is how long a node of a fleet keeps its place in the order of turns (Turn).
const TurnEvery = 500 * time.Millisecond

// Turn is a node's place in its fleet's order of turns at some moment. A report read
// before the current order began gives no turns: the slots it shows free may have gone
// at another node's turn before it.
type Turn struct {
	// Place is the node's place (0 to N-1) in the order since Since (unix ns).
	Place, N, Since int64
}

// TurnAt is the place at now of the node of rank (1 to n) in a fleet of n.
func TurnAt(n, rank int64, now time.Time) Turn {
	n = max(n, 1)
	period := now.UnixNano() / int64(TurnEvery)
	return Turn{Place: (min(max(rank, 1), n) - 1 + period) % n, N: n, Since: period * int64(TurnEvery)}
}

// Mine reports whether slot i of a report read at readAt (unix ns) is the node's turn.
func (t Turn) Mine(i, readAt int64) bool {
	return readAt >= t.Since && i%t.N == t.Place
}

// Count is how many of count slots (rounded up) of reports read at readAt (the oldest of
// them) are the node's turns.
func (t Turn) Count(count float64, readAt int64) int64 {
	c := int64(math.Ceil(count))
	if c <= t.Place || readAt < t.Since {
		return 0
	}
	return (c-1-t.Place)/t.N + 1
}

// takesTurns reports whether this node takes turns in space s: it is one of a fleet whose
// order it knows, and s says what its turns are (every server's capacity known).
func (q *Queue) takesTurns(s Space) bool {
	return q.nodes.Load() > 1 && q.rank.Load() > 0 &&
		!math.IsInf(s.Reported, 1) && !math.IsNaN(s.SpareTurns)
}

// inTurn reports whether a held request of heavy flow f may start on this node's turns in
// space s: a slot beyond some server's last when f has more than one request in flight,
// and a slot of those free beyond keep.
func (q *Queue) inTurn(f *Flow, s Space, keep, capacity float64) bool {
	if s.SpareTurns <= 0 && f.leavesLastSlots(capacity) {
		return false
	}
	t := TurnAt(q.nodes.Load(), q.rank.Load(), q.now())
	return float64(t.Count(s.Reported-keep, s.ReportedAt)) > s.Started
}
