package fairq

import (
	"sort"
	"time"
)

// The fleet's shares. Behind a load balancer every node holds a part of each account's
// requests, so an account that takes the servers from the others may hold no more than its
// share on any one node. The fleet exchange (dataplane/fleetshare) reports each node's
// flows (Loads) and hands back the other nodes' requests in flight per account and the
// accounts active anywhere (SetFleet): the queue adds the former to each flow's own count
// and the latter's weights to the active weight, wherever shares are judged (heavy, the
// reserves), so an account above its fleet-wide share is heavy on every node. What such an
// account leaves free is the fleet's: each node sees its part of the servers' free slots
// (1/N) and keeps its part of the headroom and reserves, and lets the requests it holds go
// only on its turns of what the same reports show (turn.go). The counts
// are as old as the last answer; when no answer renews them before their time is up, they
// drop to none and the queue judges by its own flows alone.

// FlowLoad is one account's flow on this node: its requests in flight here and its weight.
type FlowLoad struct {
	Account  string
	InFlight int64
	Weight   int64
}

// Loads returns the flows with requests in flight or waiting here, or seen within Linger
// (at most limit of them, those with the most in flight; limit ≤ 0: all). Counts are this
// node's own, never the fleet's.
func (q *Queue) Loads(limit int) []FlowLoad {
	linger := q.now().Add(-q.cfg.Linger).UnixNano()
	var out []FlowLoad
	q.flows.Range(func(k, v any) bool {
		f := v.(*Flow)
		n := f.inFlight.Load()
		active := n > 0 || f.seen.Load() >= linger
		if !active {
			q.mu.Lock()
			active = f.waiting.Len() > 0
			q.mu.Unlock()
		}
		if active {
			out = append(out, FlowLoad{Account: k.(string), InFlight: max(n, 0), Weight: f.weight.Load()})
		}
		return true
	})
	if limit > 0 && len(out) > limit {
		sort.Slice(out, func(i, j int) bool { return out[i].InFlight > out[j].InFlight })
		out = out[:limit]
	}
	return out
}

// Fleet is what a fleet answer tells the queue.
type Fleet struct {
	// Others is, per account, the requests in flight on the other nodes; Weights the weight
	// of every account active on any node.
	Others, Weights map[string]int64
	// Nodes is the number of live nodes, this one included, among which the servers' free
	// slots are divided (routing.Selector.Room): the headroom and reserves an account above
	// its share leaves are kept by the fleet, each node keeping its part (roomFor).
	Nodes int
	// Rank is this node's place among them (1 to Nodes, an order every node's answer
	// agrees on; 0 unknown), by which the nodes take turns at what an account above its
	// share may start on the same server reports (roomFor).
	Rank int
	// TTL is how long the counts and the place hold without a new answer (the exchange's
	// fallback time).
	TTL time.Duration
}

// SetFleet installs a fleet answer: the other nodes' counts, which one without accounts
// drops at once, and the live nodes and this node's place, which hold until the next
// answer (the place lapses after TTL, the node count stays: the exchange's fallback
// passes it on with no place).
func (q *Queue) SetFleet(fl Fleet) {
	q.fleetMu.Lock()
	defer q.fleetMu.Unlock()
	others, weights := fl.Others, fl.Weights
	// An account active only elsewhere gets a flow here too: its weight is in the shares
	// and its use elsewhere in the reserves.
	for acct, w := range weights {
		if _, ok := q.flows.Load(acct); !ok {
			f := &Flow{q: q}
			f.weight.Store(max(w, 1))
			q.flows.LoadOrStore(acct, f)
		}
	}
	var sum int64
	q.flows.Range(func(k, v any) bool {
		f, acct := v.(*Flow), k.(string)
		n := max(others[acct], 0)
		_, on := weights[acct]
		f.others.Store(n)
		f.fleet.Store(on)
		sum += n
		return true
	})
	q.othersIn.Store(sum)
	q.nodes.Store(int64(max(fl.Nodes, 1)))
	q.rank.Store(int64(min(max(fl.Rank, 0), max(fl.Nodes, 1))))
	if len(others) == 0 && len(weights) == 0 && fl.Rank <= 0 {
		q.fleetUntil.Store(0)
		return
	}
	q.fleetUntil.Store(q.now().Add(fl.TTL).UnixNano())
}

// Place is the number of live nodes sharing the servers and this node's place among them
// (1 to nodes; 0 unknown), as the last fleet answer said: 1 and 0 without one. The
// selector counts this node's part of the servers' free slots and its turns by it
// (routing.Selector.Place).
func (q *Queue) Place() (nodes, rank int) {
	return int(q.nodes.Load()), int(q.rank.Load())
}

// expireFleet drops the fleet's counts and this node's place when their time is up at
// now; the live nodes last heard of stay, so the node keeps counting its part.
func (q *Queue) expireFleet(now time.Time) {
	if until := q.fleetUntil.Load(); until == 0 || now.UnixNano() <= until {
		return
	}
	q.fleetMu.Lock()
	defer q.fleetMu.Unlock()
	if until := q.fleetUntil.Load(); until == 0 || now.UnixNano() <= until {
		return // renewed meanwhile
	}
	q.flows.Range(func(_, v any) bool {
		f := v.(*Flow)
		f.others.Store(0)
		f.fleet.Store(false)
		return true
	})
	q.othersIn.Store(0)
	q.rank.Store(0)
	q.fleetUntil.Store(0)
}
