package routing

import (
	"math"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/loadstat"
)

// A key's homes are two routes every node picks alike: each earns homeShare of the
// affinity bonus before it holds the prefix, so a key's requests spread over its two
// homes by load (the less loaded of two choices) and both caches warm. A home that does
// not hold the prefix yet prefills it in full like any other replica, so the share is
// small: a long prefix's first spill waits until its first home has a request waiting,
// not merely every slot taken (with half the bonus, (a) of make bench-routing prefilled
// 1,200 tokens, 720 ms, where a slot would have freed within a tenth of that).
//
// The homes are the first two routes of the key's rendezvous order that hold no more
// than their share of the warm keys sent more than once (tenants' prefixes; sentTable's
// keysAt): consistent hashing with bounded loads, over keys (placeHomes). Rendezvous
// order alone gives the replicas shares of the keys as uneven as dice (sixteen tenants
// on four replicas: 8, 4, 2 and 2 first homes in make bench-routing's (a)), and the
// replica with eight holds eight long prefixes and takes half the tenants' bursts.
// Every node counts the same keys once the fleet's placements have reached it (within
// about two fleet intervals), so the nodes agree on a new tenant's homes.
const (
	homes     = 2
	homeShare = 0.25
	// homeSlack is how far above its share a home may hold keys, as in consistent
	// hashing with bounded loads. None would be too tight while few keys are counted:
	// one tenant's key on one of two replicas would make the other the first home of
	// every new key (keys sent once never count, so nothing would even it out).
	homeSlack = 0.25
)

// placeHomes moves the key's two homes to the front of group (in its rendezvous order),
// keeping views, tags and held (whether each route holds the key) in step; the others
// keep their order. A route is a home when the keys counted there, this one aside, plus
// this one stay within (1+homeSlack) of its weight's share of the group's keys with this
// one added, rounded up; the first two such routes in the key's order are its homes, and
// when only one is, the next route in order is the second.
func (s *Selector) placeHomes(group []index.Candidate, views []loadstat.View, tags []uint32, held []bool, key uint64, now int64) {
	s.sent.recount(now, s.warmFor())
	self := s.sent.counted(key)
	var keys, ws [maxScored]float64
	weight := groupWeights(group, ws[:0])
	total, wsum := 0.0, 0.0
	for i := range group {
		keys[i] = float64(s.sent.keysAt(tags[i]))
		if held[i] && self {
			keys[i]--
		}
		total += keys[i]
		wsum += weight[i]
	}
	found := 0
	for i := range group {
		if found == homes {
			break
		}
		bound := math.Ceil((1 + homeSlack) * (total + 1) * weight[i] / wsum)
		if weight[i] > 0 && keys[i]+1 <= bound {
			toFront(group, i, found)
			toFront(views, i, found)
			toFront(tags, i, found)
			toFront(held, i, found)
			found++
		}
	}
}

// toFront moves s[from] to s[to] (to <= from), shifting the elements between up by one.
func toFront[T any](s []T, from, to int) {
	v := s[from]
	copy(s[to+1:from+1], s[to:from])
	s[to] = v
}
