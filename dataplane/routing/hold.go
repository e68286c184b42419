package routing

import (
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/loadstat"
)

// holdBonus is the scored policy's bonus for route c, one of the key's homes, which holds
// a prefix of prefixBytes (its view v): at least bonus, the bonus by the prefix's size alone; and once the server's
// pace is learned (loadstat.Pace), the waits a full prefill of the prefix elsewhere would
// cost, at most maxHoldWaits. A wait is a slot's turn over the slots (Turn / Slots: one of
// them frees that often), with Slots at least the requests it runs when its capacity is
// not known; the prefix's tokens are its bytes over the route's prompts' bytes per token,
// and another replica is taken to prefill at this one's pace.
//
// A route that holds the prefix but is not one of its homes (the tenant went there when
// its homes were busy, or before the homes' bounds moved them) earns the size bonus
// alone: with this one it would keep the tenant for good, and the replica every new
// tenant reached first (the homes are bounded only from a tenant's second request) ended
// up holding nine tenants' prefixes in a cache for eight.
//
// Without it the bonus was a size's alone, however long a prefill takes against a
// request's turn: a tenant of a 1,200-token prefix spilled to a replica that did not hold
// it (a 750 ms prefill) where a slot of its own would free within 90 ms.
func (s *Selector) holdBonus(bonus float64, c index.Candidate, v loadstat.View, prefixBytes int) float64 {
	p := v.Pace
	if p.PrefillPerToken <= 0 || p.Turn <= 0 || prefixBytes <= 0 {
		return bonus
	}
	bpt := s.Loads.For(c.Route).PromptBytesPerToken()
	if bpt <= 0 {
		bpt = warmBytesPerToken
	}
	slots := v.Slots
	if slots <= 0 {
		slots = max(1, v.Load())
	}
	prefill := float64(prefixBytes) / bpt * float64(p.PrefillPerToken)
	waits := prefill * slots / float64(p.Turn)
	return max(bonus, min(maxHoldWaits*s.weights().Affinity, waits))
}

// maxHoldWaits bounds holdBonus at this many times the largest size bonus (Weights.Affinity):
// a prefix held is left once its holder's wait is that long, whatever its prefill.
const maxHoldWaits = 4
