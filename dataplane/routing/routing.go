// Package routing orders and guards the eligible routes of a request. Eligibility itself
// (the account's residency policy, the protocol) is decided by the node's
// index (index.Model.Candidates); routing never adds a route, it only orders and skips:
//
//   - Selector.Order orders candidates for failover: lowest priority value first, then
//     among routes of equal priority by the model's routing policy (balance.go; the
//     default scores prefix affinity against load). Selector.Plan is the plain weighted
//     random order.
//   - Health keeps a circuit breaker per upstream route (route ID + base URL, so state
//     survives snapshot swaps): after repeated failures the route is skipped for a while,
//     then half-open probes (real requests, one at a time) decide whether it is back. A
//     dead replica thus costs a few failed attempts, each failed over to the next route,
//     not a timeout per request.
package routing

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/loadstat"
)

// Selector picks routes. The zero value orders by weighted random with math/rand/v2's
// global generator; with Loads set it orders by each model's routing policy (Order).
type Selector struct {
	// IntN, when set, replaces the random source (tests).
	IntN func(n int) int
	// Loads is the node's load state per route; nil: every policy but affinity falls back
	// to weighted random.
	Loads *loadstat.Registry
	// Weights are the scored policy's (default DefaultWeights).
	Weights *Weights
	// Epsilon is the affinity policy's load bound: the preferred replica is passed over
	// when its load would exceed (1+Epsilon) of its group's average (default 0.25).
	Epsilon float64
	// WarmFor is how long a replica counts as holding a prefix after this node last sent
	// it a request with that prefix key (default 5m): such a replica earns the scored
	// policy's affinity bonus.
	WarmFor time.Duration
	// Saturation says when a route is full (default DefaultSaturation).
	Saturation *Saturation
	// Place, when set, is the number of live nodes sharing the routes' servers and this
	// node's place among them (1 to nodes; 0 unknown), as the fleet's last answer said
	// (fairq.Queue.Place): Room counts this node's part of their free slots, and the
	// slots beyond each server's last free one are taken in turns (turnSlots).
	Place func() (nodes, rank int)
	// Alone, when set and true, says the node knows the other nodes' starts and ends as
	// they happen (dataplane/startfeed, Feed.Live): Room then takes what the servers'
	// reports show free, less every node's requests since, as one node alone would,
	// without splitting it or taking turns.
	Alone func() bool
	// WarmHomes sends a copy of a reused key's request to its other home while that one
	// does not hold the prefix and has slots to spare (warm.go; Decision.Warm).
	WarmHomes bool
	sent      sentTable
	warming   warmups
}

func (s *Selector) weights() *Weights {
	if s.Weights != nil {
		return s.Weights
	}
	return &DefaultWeights
}

func (s *Selector) epsilon() float64 {
	if s.Epsilon > 0 {
		return s.Epsilon
	}
	return 0.25
}

func (s *Selector) warmFor() time.Duration {
	if s.WarmFor > 0 {
		return s.WarmFor
	}
	return 5 * time.Minute
}

func (s *Selector) idHash(r *index.Route) uint64 {
	if s.Loads != nil {
		return s.Loads.For(r).IDHash
	}
	return xxhash.Sum64String(r.ID)
}

func (s *Selector) rand64() uint64 {
	if s != nil && s.IntN != nil {
		return uint64(s.IntN(math.MaxInt))
	}
	return rand.Uint64()
}

func (s *Selector) intN(n int) int {
	if s != nil && s.IntN != nil {
		return s.IntN(n)
	}
	return rand.IntN(n)
}

// Pick returns the candidate to try first among cands, which must be sorted by priority
// (index.Build does this). It reports false when cands is empty.
func (s *Selector) Pick(cands []index.Candidate) (index.Candidate, bool) {
	if len(cands) == 0 {
		return index.Candidate{}, false
	}
	group := firstGroup(cands)
	if len(group) == 1 {
		return group[0], true
	}
	return group[s.weighted(group)], true
}

// Plan appends to dst every candidate in the order they should be tried: priority groups in
// order, each group in a weighted random order. It allocates only when dst is too small.
func (s *Selector) Plan(dst, cands []index.Candidate) []index.Candidate {
	for len(cands) > 0 {
		group := firstGroup(cands)
		cands = cands[len(group):]
		start := len(dst)
		dst = append(dst, group...)
		s.shuffle(dst[start:])
	}
	return dst
}

// shuffle puts group in a weighted random order.
func (s *Selector) shuffle(group []index.Candidate) {
	for len(group) > 1 {
		i := s.weighted(group)
		group[0], group[i] = group[i], group[0]
		group = group[1:]
	}
}

// firstGroup returns the leading run of cands with equal priority.
func firstGroup(cands []index.Candidate) []index.Candidate {
	p := cands[0].Route.Priority
	n := 1
	for n < len(cands) && cands[n].Route.Priority == p {
		n++
	}
	return cands[:n]
}

// weighted returns an index into group drawn with probability proportional to weight;
// when every weight is zero the draw is uniform.
func (s *Selector) weighted(group []index.Candidate) int {
	total := 0
	for _, c := range group {
		total += c.Route.Weight
	}
	if total <= 0 {
		return s.intN(len(group))
	}
	r := s.intN(total)
	for i, c := range group {
		if r < c.Route.Weight {
			return i
		}
		r -= c.Route.Weight
	}
	return len(group) - 1
}
