package signup

import (
	"container/list"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiter holds one token bucket per client address, at most max of them; the least
// recently seen address is forgotten first (it then starts again with a full bucket).
type limiter struct {
	mu    sync.Mutex
	every rate.Limit
	burst int
	max   int
	order *list.List // front = most recently used; values are *entry
	byKey map[string]*list.Element
}

type entry struct {
	key string
	lim *rate.Limiter
}

func newLimiter(every rate.Limit, burst, max int) *limiter {
	return &limiter{every: every, burst: burst, max: max, order: list.New(), byKey: make(map[string]*list.Element)}
}

// allow takes one token for key at now. When none is left it returns false and how long
// until one is.
func (l *limiter) allow(key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lim *rate.Limiter
	if el, ok := l.byKey[key]; ok {
		l.order.MoveToFront(el)
		lim = el.Value.(*entry).lim
	} else {
		lim = rate.NewLimiter(l.every, l.burst)
		l.byKey[key] = l.order.PushFront(&entry{key: key, lim: lim})
		for l.order.Len() > l.max {
			old := l.order.Back()
			l.order.Remove(old)
			delete(l.byKey, old.Value.(*entry).key)
		}
	}
	r := lim.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Minute
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

func (l *limiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.order.Len()
}
