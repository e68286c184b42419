package api

import (
	"container/list"
	"math"
	"sync"
	"time"
)

// buckets is a fixed-size table of token buckets, one per key: at most max keys are kept,
// the least recently used one making room for a new key. Nothing is ever cleared at once,
// so no caller can reset other keys' buckets; evicting a key needs max other keys to be used
// after it, and a key's bucket only gets an entry when the keys checked before it admit the
// event (see allow). Safe for concurrent use.
type buckets struct {
	mu    sync.Mutex
	max   int
	rate  float64 // tokens per second
	burst float64
	m     map[string]*list.Element
	lru   list.List // of *bucket, most recently used first
}

type bucket struct {
	key    string
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

// newBuckets returns a table of at most max buckets refilling at perSecond, holding burst.
func newBuckets(max int, perSecond float64, burst int) *buckets {
	return &buckets{max: max, rate: perSecond, burst: float64(burst), m: make(map[string]*list.Element)}
}

// allow admits one event on every key, in order: each key must have a token, and tokens
// are taken only when all have one. A key is looked up (and given a bucket) only when the
// keys before it have a token, so a refused event adds no entry for the keys after the one
// that refused it. On refusal it returns how long until the refusing key has a token.
func (b *buckets) allow(now time.Time, keys ...string) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var arr [4]*bucket
	got := arr[:0]
	for _, k := range keys {
		bk := b.get(k, now)
		if bk.tokens < 1 {
			wait := time.Duration(math.Ceil((1 - bk.tokens) / b.rate * float64(time.Second)))
			return false, max(wait, time.Millisecond)
		}
		got = append(got, bk)
	}
	for _, bk := range got {
		bk.tokens--
	}
	return true, 0
}

// giveBack returns the token an admitted event took on each key (an event that turned out
// not to count), up to the burst.
func (b *buckets) giveBack(now time.Time, keys ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range keys {
		if el, ok := b.m[k]; ok {
			bk := el.Value.(*bucket)
			b.refill(bk, now)
			bk.tokens = min(bk.tokens+1, b.burst)
		}
	}
}

// get returns key's bucket brought up to now, making one (and evicting the least recently
// used key when the table is full).
func (b *buckets) get(key string, now time.Time) *bucket {
	if el, ok := b.m[key]; ok {
		b.lru.MoveToFront(el)
		bk := el.Value.(*bucket)
		b.refill(bk, now)
		return bk
	}
	if b.lru.Len() >= b.max {
		old := b.lru.Back()
		b.lru.Remove(old)
		delete(b.m, old.Value.(*bucket).key)
	}
	bk := &bucket{key: key, tokens: b.burst, at: now}
	b.m[key] = b.lru.PushFront(bk)
	return bk
}

func (b *buckets) refill(bk *bucket, now time.Time) {
	if d := now.Sub(bk.at); d > 0 {
		bk.tokens = min(b.burst, bk.tokens+d.Seconds()*b.rate)
		bk.at = now
	}
}

// len is the number of keys held.
func (b *buckets) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lru.Len()
}
