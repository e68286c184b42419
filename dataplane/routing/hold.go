package routing

import (
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/loadstat"
)

// holdBonus is the scored policy's bonus for route c, which holds req's prefix (of
// PrefixBytes) and is one of the key's homes or was sent the key within recentHold (its
// view v): at least bonus, the bonus by the prefix's size alone; and once the server's
// pace is learned (loadstat.Route.Pace), the waits a full prefill of the prefix elsewhere
// would cost, at most maxHoldWaits times the largest size bonus. A wait is a slot's turn
// over the slots (Turn / Slots: one of them frees that often), with Slots at least the
// requests it runs when its capacity is not known; the prefix's tokens are its bytes over
// the route's prompts' bytes per token, and another replica is taken to prefill at this
// one's pace.
// Without it a tenant of a 1,200-token prefix spilled to a replica that did not hold it
// (a 750 ms prefill) where a slot of its own would free within 90 ms.
//
// A spill's prefill is paid once, and the tenant's requests that arrive during it go to a
// replica more: the waits are divided by one plus the requests the tenant sends in a
// prefill (keyGap: the time between its requests across the fleet). A
// tenant sending one request a second keeps to its holder; one sending faster than its
// holders serve spills as readily as by its prefix's size alone, and then has the
// replicas it needs (a hot tenant of 13 requests a second held to its two homes queued
// there: TTFT p90 340 ms against 32).
//
// A route sent the key longer ago than recentHold that is not a home earns the size bonus
// alone (score): its cache may have dropped the prefix since. A home earns a quarter of
// the size bonus more than a recent holder, so a tenant drifts home, and a tenant held only
// away from its homes moves home by a warm-up copy (toWarm): held everywhere alike, the
// replica every early tenant reached first (a key counts towards the homes' bounds from
// its second request) kept nine tenants' prefixes in a cache for eight.
func (s *Selector) holdBonus(bonus float64, c index.Candidate, v loadstat.View, req Request) float64 {
	lr := s.Loads.For(c.Route)
	p := lr.Pace()
	if p.PrefillPerToken <= 0 || p.Turn <= 0 || req.PrefixBytes <= 0 {
		return bonus
	}
	slots := v.Slots
	if slots <= 0 {
		slots = max(1, v.Load())
	}
	prefill := prefixTokens(req.PrefixBytes, lr) * float64(p.PrefillPerToken)
	waits := prefill * slots / float64(p.Turn)
	if gap := s.keyGap(req.Key); gap > 0 {
		waits /= 1 + prefill/float64(gap)
	}
	return max(bonus, min(maxHoldWaits*s.weights().Affinity, waits))
}

// maxHoldWaits bounds holdBonus at this many times the largest size bonus
// (Weights.Affinity): a prefix held is left once its holder's wait is that long, whatever
// its prefill.
const maxHoldWaits = 4

// recentHold is how recently a route that is not one of the key's homes must have been
// sent the key to earn holdBonus: a hot tenant's replicas beyond its homes, in use every
// second, are as warm as its homes, while one it was sent to minutes ago may have been
// pushed out of the cache since.
const recentHold = 10 * time.Second

// keyGap is the time between the key's requests across the fleet: this node's gap between
// its sends over the live nodes (a balancer spreads a tenant's requests over them), or 0
// before this node sent it twice.
func (s *Selector) keyGap(key uint64) time.Duration {
	gap := s.sent.gapOf(key)
	if gap <= 0 {
		return 0
	}
	n, _ := s.place()
	return gap / time.Duration(n)
}
