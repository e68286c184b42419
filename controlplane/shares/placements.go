package shares

import (
	"time"

	"github.com/sekgate/gateway/shared/internalapi"
)

// The placements of the fleet: where each node sent each prefix key (internalapi.Placement),
// kept in a ring of the newest placementRing and handed to the other nodes, so every node
// routes a tenant to the replicas that hold its prefix whichever node the load balancer
// chose (docs/routing.md, "Fleet"). A placement older than WarmFor is not handed on.

// placementRing is how many of the newest placements the table keeps.
const placementRing = 1 << 17

// WarmFor is how long a placement is handed on (the nodes' --prefix warm time, 5 min).
const WarmFor = 5 * time.Minute

type placed struct {
	node string
	p    internalapi.Placement // AgoMs unused
	at   time.Time
}

// placements is the ring; seq counts every placement ever added (the ring holds the
// newest, seq-placementRing+1 .. seq).
type placements struct {
	ring []placed
	seq  uint64
}

// add appends node's placements, reported at now.
func (ps *placements) add(node string, in []internalapi.Placement, now time.Time) {
	if ps.ring == nil && len(in) > 0 {
		ps.ring = make([]placed, placementRing)
	}
	for _, p := range in[:min(len(in), internalapi.MaxFleetPlacements)] {
		ps.seq++
		ps.ring[ps.seq%placementRing] = placed{node: node, p: internalapi.Placement{Key: p.Key, Tag: p.Tag},
			at: now.Add(-time.Duration(max(p.AgoMs, 0)) * time.Millisecond)}
	}
}

// since returns the placements after seq made by nodes other than node and still warm at
// now (the newest MaxFleetPlacements), and the sequence to continue from. A seq from
// before the ring (or from a control plane that restarted since) starts from the oldest
// held.
func (ps *placements) since(node string, seq uint64, now time.Time) ([]internalapi.Placement, uint64) {
	if seq > ps.seq {
		seq = 0
	}
	first := max(seq+1, ps.seq-min(ps.seq, placementRing-1))
	if n := ps.seq + 1 - first; n > internalapi.MaxFleetPlacements {
		first = ps.seq + 1 - internalapi.MaxFleetPlacements
	}
	var out []internalapi.Placement
	for s := first; s <= ps.seq; s++ {
		e := ps.ring[s%placementRing]
		if e.node == node || now.Sub(e.at) >= WarmFor {
			continue
		}
		p := e.p
		p.AgoMs = max(now.Sub(e.at).Milliseconds(), 0)
		out = append(out, p)
	}
	return out, ps.seq
}
