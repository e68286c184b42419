package routing

// Placements are the prefix keys a node sent to its routes, shared with the other nodes of
// its fleet through the control plane (dataplane/fleetshare): a node learns where the
// others sent a key, so a tenant's requests go where its prefix is cached whichever node
// the load balancer chose, including after the tenant spilled past its two homes.
//
// A placement learned from the fleet is stored with the lowest bit of its time set, and
// one this node made with it clear, so that a node reports only its own placements and a
// learned one never echoes back. A nanosecond of time is nothing to WarmFor.

// Placement is one prefix key sent to the route tagged Tag (the low bits of its ID's hash,
// the same on every node) at At, unix ns.
type Placement struct {
	Key uint64
	Tag uint32
	At  int64
}

// Placements returns this node's own placements made after since (unix ns), at most max.
func (s *Selector) Placements(since int64, limit int) []Placement {
	var out []Placement
	for i := range s.sent.slots {
		sl := &s.sent.slots[i]
		key := sl.key.Load()
		for w := range sl.tags {
			tag, at := sl.tags[w].Load(), sl.at[w].Load()
			if tag == 0 || at <= since || at&1 == 1 {
				continue
			}
			if len(out) == limit {
				return out
			}
			out = append(out, Placement{Key: key, Tag: tag, At: at})
		}
	}
	return out
}

// Learn takes placements other nodes made: each counts as a send of this node at its time
// (WarmFor applies), unless the table holds a newer one of the key to that route.
func (s *Selector) Learn(ps []Placement, now int64) {
	warm := int64(s.warmFor())
	for _, p := range ps {
		if p.Tag == 0 || p.At > now || now-p.At >= warm {
			continue
		}
		s.sent.learn(p.Key, p.Tag, p.At|1)
	}
}
