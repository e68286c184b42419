package routing

import (
	"sync/atomic"
	"time"
)

// sentTable remembers, per prefix key, the replicas this node sent it to and when: the
// replicas whose prefix caches likely hold the key's prefix. It is a direct-mapped table
// of atomics, with room for sentWays replicas per key; a key colliding with another
// takes its slot over (both are then forgotten by the other), and a key sent to more
// replicas forgets the one it used least recently. Readers never lock; a reader racing a
// takeover may see the old key's replicas once, which costs one routing choice, not
// correctness.
type sentTable struct {
	slots [sentSlots]sentSlot
}

const (
	sentSlots = 4096
	sentWays  = 4
)

type sentSlot struct {
	key  atomic.Uint64
	tags [sentWays]atomic.Uint32 // low bits of the route's ID hash (0: empty)
	at   [sentWays]atomic.Int64  // unix ns of the last send
}

// tagOf is a route's tag in the table: never 0.
func tagOf(idHash uint64) uint32 { return uint32(idHash) | 1 }

// sentWithin reports whether key was sent to the route tagged tag within d before now.
func (t *sentTable) sentWithin(key uint64, tag uint32, now int64, d time.Duration) bool {
	s := &t.slots[key%sentSlots]
	if s.key.Load() != key {
		return false
	}
	for i := range s.tags {
		if s.tags[i].Load() == tag {
			return now-s.at[i].Load() < int64(d)
		}
	}
	return false
}

// mark records that key was sent to the route tagged tag at now (its time's lowest bit
// cleared: placements.go).
func (t *sentTable) mark(key uint64, tag uint32, now int64) {
	t.put(key, tag, now&^1, false)
}

// learn records that another node sent key to the route tagged tag at at (lowest bit set),
// unless a later send of the key to that route is held.
func (t *sentTable) learn(key uint64, tag uint32, at int64) {
	t.put(key, tag, at, true)
}

// put stores a send of key to tag at now; keepNewer leaves a later one in place.
func (t *sentTable) put(key uint64, tag uint32, now int64, keepNewer bool) {
	s := &t.slots[key%sentSlots]
	if s.key.Load() != key {
		s.key.Store(key)
		for i := range s.tags {
			s.tags[i].Store(0)
		}
	}
	oldest := 0
	for i := range s.tags {
		if s.tags[i].Load() == tag {
			if !keepNewer || s.at[i].Load() < now {
				s.at[i].Store(now)
			}
			return
		}
		if s.tags[i].Load() == 0 {
			oldest = i
			break
		}
		if s.at[i].Load() < s.at[oldest].Load() {
			oldest = i
		}
	}
	s.at[oldest].Store(now)
	s.tags[oldest].Store(tag)
}
