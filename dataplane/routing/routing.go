// Package routing orders and guards the eligible routes of a request. Eligibility itself
// (the account's residency policy, the protocol) is decided by the node's
// index (index.Model.Candidates); routing never adds a route, it only orders and skips:
//
//   - Selector.Plan orders candidates for failover: lowest priority value first, then a
//     weighted random order among routes of equal priority.
//   - Health keeps a circuit breaker per upstream route (route ID + base URL, so state
//     survives snapshot swaps): after repeated failures the route is skipped for a while,
//     then half-open probes (real requests, one at a time) decide whether it is back. A
//     dead replica thus costs a few failed attempts, each failed over to the next route,
//     not a timeout per request.
package routing

import (
	"math/rand/v2"

	"github.com/sekgate/gateway/dataplane/index"
)

// Selector picks routes. The zero value uses math/rand/v2's global generator.
type Selector struct {
	// IntN, when set, replaces the random source (tests).
	IntN func(n int) int
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
		rest := dst[start:]
		for len(rest) > 1 {
			i := s.weighted(rest)
			rest[0], rest[i] = rest[i], rest[0]
			rest = rest[1:]
		}
	}
	return dst
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
