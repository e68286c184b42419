package routing

import (
	"math"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/loadstat"
	"github.com/sekgate/gateway/internal/flagenv"
)

// Saturation is when a route counts as full: its server's estimated waiting queue
// (loadstat.View.Excess, negative while slots are free) is at least Queue once its
// capacity is known (else its reported waiting queue is at least max(Queue, 1)), or its
// KV-cache use is at least KV, by a report at least half fresh.
type Saturation struct {
	Queue float64 `flag:"saturation-queue" help:"a route is full when its server's estimated waiting queue reaches this"`
	KV    float64 `flag:"saturation-kv" default:"0.95" help:"a route is full when its server's KV-cache use reaches this share (0 to 1)"`
}

// DefaultSaturation: no slot is free (Queue 0), or the KV cache is 95 % full. Held at the
// node, requests go in turns the moment a slot frees; in the servers' own queues they
// would go first come, first served.
var DefaultSaturation = func() Saturation {
	var s Saturation
	flagenv.MustDefaults(&s) // the fields' default tags
	return s
}()

func (s *Selector) saturation() *Saturation {
	if s.Saturation != nil {
		return s.Saturation
	}
	return &DefaultSaturation
}

// freeSlots is how many more requests a route's server can start now by the view v: its
// free slots (plus Saturation.Queue) once its capacity is known, 0 when its KV cache is
// full; +Inf when its capacity is unknown and its queue is short, or without a report at
// least half fresh (the node then knows nothing that would hold a request back).
func freeSlots(v loadstat.View, sat *Saturation) float64 {
	if v.Fresh < 0.5 {
		return math.Inf(1)
	}
	if v.KV >= sat.KV*v.Fresh {
		return 0
	}
	if v.SlotsKnown() {
		return max(0, sat.Queue*v.Fresh-v.Excess)
	}
	if v.Waiting >= max(sat.Queue, 1)*v.Fresh {
		return 0
	}
	return math.Inf(1)
}

// Room is what the fair queue asks of a request's candidates: how many more requests
// their servers can start now (the sum of freeSlots; +Inf when any route's is), as many
// beyond each server's last free slot (spare: what an account above its share may take),
// and the capacity known of them (the sum of their known slots). Without a load registry
// the room is unbounded.
//
// The free slots a server reports are seen by every node of the fleet at once, so a node
// counts its part of them (Nodes, n): a 1/n share of the slots the report showed free, less
// every request this node started there since (nodePart). The nodes' fair queues together
// then keep the headroom and reserves one node keeps alone, however many of them act on
// the same report, instead of each filling it.
func (s *Selector) Room(cands []index.Candidate, now int64) (free, spare, capacity float64) {
	if s.Loads == nil || len(cands) == 0 {
		return math.Inf(1), math.Inf(1), 0
	}
	sat := s.saturation()
	n := 1
	if s.Nodes != nil {
		n = max(s.Nodes(), 1)
	}
	for _, c := range cands {
		v := s.Loads.For(c.Route).View(now, s.Loads.FreshFor)
		f := freeSlots(v, sat)
		free += nodePart(f, v.Moved, float64(n))
		last := 0.0
		if keepsLast(v) {
			last = 1
		}
		spare += nodePart(f-last, v.Moved, float64(n)) // below 0 when none is free: no spare
		capacity += v.Slots
	}
	return free, spare, capacity
}

// keepsLast reports whether the route's last free slot is kept from accounts above their
// share: a server of two or more slots (one of a single slot would never serve them).
func keepsLast(v loadstat.View) bool { return v.Slots >= 2 }

// nodePart is a node's part of a route's free slots, free by this node's view (the
// report's free slots less moved, this node's own requests started less ended since the
// report), in a fleet of n nodes: (report's free)/n − moved. Requests this node ended
// since the report freed slots that any node may take: they count a 1/n share, like the
// report's.
func nodePart(free, moved, n float64) float64 {
	if math.IsInf(free, 1) {
		return free
	}
	return max(0, free-(n-1)*max(moved, 0)) / n
}
