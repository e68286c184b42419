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
	// counts[cur] counts the reused keys warm at each route (keyCounts); recount
	// rebuilds the other one from the table and makes it current.
	counts    [2]keyCounts
	cur       atomic.Uint32
	nextCount atomic.Int64
}

const (
	sentSlots = 4096
	sentWays  = 4
)

type sentSlot struct {
	key  atomic.Uint64
	tags [sentWays]atomic.Uint32 // low bits of the route's ID hash (0: empty)
	at   [sentWays]atomic.Int64  // unix ns of the last send
	// reused says the key was sent more than once (by this node or, as learned, others).
	reused atomic.Bool
	// last is when this node last sent the key (unix ns); gap the moving average of the
	// time between its sends (ns; 0 before the second).
	last, gap atomic.Int64
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
	s := &t.slots[key%sentSlots]
	if s.key.Load() != key {
		return
	}
	if last := s.last.Swap(now); last > 0 && last < now {
		g := now - last
		if old := s.gap.Load(); old > 0 {
			g = old + (g-old)/gapWeight
		}
		s.gap.Store(g)
	}
}

// gapWeight: a new gap between a key's sends weighs 1/gapWeight in its moving average.
const gapWeight = 4

// gapOf is the moving average of the time between this node's sends of key (0 before
// its second send, or when the key's slot was taken over since).
func (t *sentTable) gapOf(key uint64) time.Duration {
	s := &t.slots[key%sentSlots]
	if s.key.Load() != key {
		return 0
	}
	return time.Duration(s.gap.Load())
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
		s.reused.Store(false)
		s.last.Store(0)
		s.gap.Store(0)
		for i := range s.tags {
			s.tags[i].Store(0)
		}
		s.at[0].Store(now)
		s.tags[0].Store(tag)
		return
	}
	// Sent before: the key is reused, and from now on its routes count (keysAt).
	first := !s.reused.Swap(true)
	oldest := 0
	for i := range s.tags {
		if s.tags[i].Load() == tag {
			if !keepNewer || s.at[i].Load() < now {
				s.at[i].Store(now)
			}
			if first {
				t.countWays(s)
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
	if first {
		t.countWays(s)
	} else {
		t.counts[t.cur.Load()].add(tag)
	}
}

// countWays counts a reused key at every route its slot holds.
func (t *sentTable) countWays(s *sentSlot) {
	c := &t.counts[t.cur.Load()]
	for i := range s.tags {
		if tag := s.tags[i].Load(); tag != 0 {
			c.add(tag)
		}
	}
}

// keysAt is how many reused keys (sent more than once) are warm at the route tagged tag:
// exact at the last recount, plus those counted since (a key forgotten since is counted
// until the next). A key sent once is not counted: unique prompts come and go wherever
// load sends them, and counting them would steer new keys towards the routes load avoids.
func (t *sentTable) keysAt(tag uint32) int {
	return t.counts[t.cur.Load()].get(tag)
}

// counted reports whether key is among those keysAt counts (it was sent more than once).
func (t *sentTable) counted(key uint64) bool {
	s := &t.slots[key%sentSlots]
	return s.key.Load() == key && s.reused.Load()
}

// recountEvery is how often the table's keys per route are counted afresh.
const recountEvery = int64(time.Second)

// recount rebuilds the reused keys per route from the table (sent within warm before now)
// when the last count is older than recountEvery; one caller does it, the others go on.
// It scans the whole table (tens of microseconds) and allocates nothing.
func (t *sentTable) recount(now int64, warm time.Duration) {
	next := t.nextCount.Load()
	if now < next || !t.nextCount.CompareAndSwap(next, now+recountEvery) {
		return
	}
	fresh := 1 - t.cur.Load()
	c := &t.counts[fresh]
	c.reset()
	for i := range t.slots {
		s := &t.slots[i]
		if !s.reused.Load() {
			continue
		}
		for w := range s.tags {
			if tag := s.tags[w].Load(); tag != 0 && now-s.at[w].Load() < int64(warm) {
				c.add(tag)
			}
		}
	}
	t.cur.Store(fresh)
}

// keyCounts is an open-addressed table of route tags and the reused keys warm at each.
// Routes beyond its room go uncounted (their homes then fall back to the rendezvous
// order).
type keyCounts struct {
	tags [countSlots]atomic.Uint32
	n    [countSlots]atomic.Int32
}

const countSlots = 256

// add counts one more key at the route tagged tag.
func (c *keyCounts) add(tag uint32) {
	for i := range uint32(countSlots) {
		j := (tag + i) % countSlots
		t := c.tags[j].Load()
		if t == 0 && c.tags[j].CompareAndSwap(0, tag) {
			t = tag
		} else if t == 0 {
			t = c.tags[j].Load()
		}
		if t == tag {
			c.n[j].Add(1)
			return
		}
	}
}

// get is the count for the route tagged tag.
func (c *keyCounts) get(tag uint32) int {
	for i := range uint32(countSlots) {
		j := (tag + i) % countSlots
		switch c.tags[j].Load() {
		case tag:
			return int(c.n[j].Load())
		case 0:
			return 0
		}
	}
	return 0
}

func (c *keyCounts) reset() {
	for j := range c.tags {
		c.tags[j].Store(0)
		c.n[j].Store(0)
	}
}
