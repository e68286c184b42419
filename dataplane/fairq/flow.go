package fairq

import (
	"container/list"
	"math"
	"sync/atomic"
	"time"
)

// Flow is one account's traffic through the node: its requests in flight (started after
// the queue, or without it, and not done yet), its weight, and its requests waiting; and,
// from the fleet exchange, its requests in flight on the other nodes (fleet.go). Flows are
// kept per account ID for the node's life while in use (Flow), and forgotten after Forget
// of idleness.
type Flow struct {
	q        *Queue
	inFlight atomic.Int64
	weight   atomic.Int64
	seen     atomic.Int64 // unix ns of the last request
	// others is the account's requests in flight on the other nodes, fleet whether it is
	// active on any node, as the last fleet answer said (SetFleet; 0 and false without).
	others atomic.Int64
	fleet  atomic.Bool
	// peak is the most requests in flight since peakAt (unix ns), kept for Remember.
	peak, peakAt atomic.Int64

	// Guarded by q.mu: requests waiting, and grants in the current turn.
	waiting list.List
	served  int
}

// Flow returns account acct's flow, with its weight (its turns' length and its share of the
// servers when they are full; at least 1) set.
func (q *Queue) Flow(acct string, weight int) *Flow {
	f, ok := q.flows.Load(acct)
	if !ok {
		f, _ = q.flows.LoadOrStore(acct, &Flow{q: q})
	}
	fl := f.(*Flow)
	w := int64(max(weight, 1))
	if fl.weight.Load() != w { // every request asks: write only on a change
		fl.weight.Store(w)
	}
	now := q.now().UnixNano()
	if prev := fl.seen.Swap(now); now-prev > int64(q.cfg.Linger) && fl.inFlight.Load() == 0 && !fl.fleet.Load() {
		q.activeWeight.Add(w) // active again: counted before the next refresh
	}
	return fl
}

// load is the flow's requests in flight on every node: here and, as last heard, elsewhere.
func (f *Flow) load() int64 { return f.inFlight.Load() + f.others.Load() }

// Start counts a request of the flow in flight; Done must follow.
func (f *Flow) Start() {
	if n := f.inFlight.Add(1) + f.others.Load(); n > f.peak.Load() {
		f.peak.Store(n)
		f.peakAt.Store(f.seen.Load())
	}
	f.q.inFlight.Add(1)
}

// Done counts a request of the flow off.
func (f *Flow) Done() {
	f.inFlight.Add(-1)
	f.q.inFlight.Add(-1)
}

// heavy reports whether the flow has more than its weighted share (among the flows active
// lately, Queue.refresh) of the servers' capacity in flight (one at its share exactly may
// start one more: it is not above it yet), or, the capacity unknown (0),
// more than its share of the requests in flight; such a flow leaves the others' reserve
// and Headroom free when the servers are nearly full. Requests in flight count on every
// node of the fleet (Flow.load).
func (f *Flow) heavy(capacity float64) bool {
	active := f.q.activeWeight.Load()
	if active <= 0 {
		return false
	}
	if capacity > 0 {
		return float64(f.load()*active) > capacity*float64(f.weight.Load())
	}
	return f.load()*active > (f.q.inFlight.Load()+f.q.othersIn.Load())*f.weight.Load()
}

// leavesLastSlots reports whether the flow leaves each server's last free slot to the
// others at capacity: it is heavy with more than one request in flight (one request never
// is, however many accounts share the servers).
func (f *Flow) leavesLastSlots(capacity float64) bool {
	return f.load() > 1 && f.heavy(capacity)
}

// refresh recomputes the weight of the flows active within Linger (requests in flight or
// waiting, or seen), active on another node or holding a reserve, the reserve of the flows
// below their share (the most they had in flight within Remember less what they have now,
// on every node), and forgets flows idle for Forget; it drops the fleet's counts first
// when no answer renewed them in time (expireFleet).
func (q *Queue) refresh(now time.Time) {
	q.expireFleet(now)
	var active int64
	linger, forget := now.Add(-q.cfg.Linger).UnixNano(), now.Add(-q.cfg.Forget).UnixNano()
	remember := now.Add(-q.cfg.Remember).UnixNano()
	q.flows.Range(func(k, v any) bool {
		f := v.(*Flow)
		seen := f.seen.Load()
		n := f.load()
		if f.peakAt.Load() < remember || q.cfg.Remember < 0 || n > f.peak.Load() {
			f.peak.Store(n) // forgotten, or passed on the other nodes: from now on
			f.peakAt.Store(now.UnixNano())
		}
		q.mu.Lock()
		busy := n > 0 || f.waiting.Len() > 0 || f.fleet.Load()
		q.mu.Unlock()
		switch {
		case busy || seen >= linger || f.peak.Load() > n:
			active += f.weight.Load()
		case seen < forget:
			q.flows.Delete(k)
		}
		return true
	})
	q.activeWeight.Store(active)
	// Each flow's reserve is what it used lately and does not use now, up to its share of
	// the servers' capacity (the last a request saw, Queue.capacity); the queue keeps the
	// largest two (bursts of different accounts seldom coincide, and a sum over many small
	// accounts would hold back a busy one for slots nobody takes).
	var first, second int64
	var top *Flow
	capacity := math.Float64frombits(q.capacity.Load())
	q.flows.Range(func(_, v any) bool {
		f := v.(*Flow)
		peak := f.peak.Load()
		if capacity > 0 && active > 0 {
			peak = min(peak, int64(math.Ceil(capacity*float64(f.weight.Load())/float64(active))))
		}
		switch r := max(peak-f.load(), 0); {
		case r > first:
			first, second, top = r, first, f
		case r > second:
			second = r
		}
		return true
	})
	q.reserve.Store(first)
	q.reserve2.Store(second)
	q.reserveOf.Store(top)
}

// reserveFor is the largest reserve of a flow other than f.
func (q *Queue) reserveFor(f *Flow) int64 {
	if q.reserveOf.Load() == f {
		return q.reserve2.Load()
	}
	return q.reserve.Load()
}
