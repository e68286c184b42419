// Package fairq holds requests when every route that could serve them is saturated, in
// one FIFO queue per account, and lets them go in turn: weighted round robin over the
// accounts with requests waiting, so an account sending a burst waits behind its own
// requests, not in front of everyone else's. A request leaves the queue when its turn
// comes and its routes have room (a request finishing, or a poll, lets one go), or is
// refused when its account's queue or the whole queue is full or when it has waited
// MaxWait.
package fairq

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Refusals.
var (
	ErrFull    = errors.New("fairq: queue full")
	ErrTimeout = errors.New("fairq: waited too long")
)

// Config configures a Queue. Zero fields take the defaults noted.
type Config struct {
	// MaxWait bounds a request's wait (default 5s).
	MaxWait time.Duration
	// MaxDepth bounds the requests waiting in all (default 1024), AccountDepth those of one
	// account (default 64).
	MaxDepth, AccountDepth int
	// Poll is how often a waiting request's routes are looked at again when no request
	// finishes (default 20ms).
	Poll time.Duration
}

// Queue is the node's fair queue. The zero value is not usable; see New.
type Queue struct {
	cfg Config

	mu     sync.Mutex
	byAcct map[string]*account
	ring   []*account // accounts with requests waiting, in turn order
	next   int        // whose turn it is
	depth  int
	// busy mirrors depth > 0 for Busy, which every request asks.
	busy atomic.Bool

	waited  *prometheus.HistogramVec
	refused *prometheus.CounterVec
	// Granted counts requests let go after waiting (tests, benchmarks).
	Granted atomic.Int64
	// pending counts requests let go that have not resumed yet: until they are dispatched
	// their routes' load does not show them, so no other goes meanwhile.
	pending atomic.Int64
}

type account struct {
	id     string
	weight int
	served int // grants in its current turn
	q      list.List
}

type waiter struct {
	ready func() bool
	ch    chan struct{}
}

// New returns a Queue with cfg's defaults filled.
func New(cfg Config) *Queue {
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 5 * time.Second
	}
	if cfg.MaxDepth <= 0 {
		cfg.MaxDepth = 1024
	}
	if cfg.AccountDepth <= 0 {
		cfg.AccountDepth = 64
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 20 * time.Millisecond
	}
	return &Queue{cfg: cfg, byAcct: make(map[string]*account),
		waited: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gateway_fair_queue_wait_seconds",
			Help:    "Time inference requests waited in the node's fair queue because every eligible route was saturated, by account class.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"class"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_fair_queue_refused_total",
			Help: "Inference requests refused with 429 by the node's fair queue, by account class and reason (full, timeout).",
		}, []string{"class", "reason"}),
	}
}

// Collectors are the queue's metrics, to register with the node's registry.
func (q *Queue) Collectors() []prometheus.Collector {
	return []prometheus.Collector{q.waited, q.refused}
}

// RetryAfter is what a refused client is told to wait.
func (q *Queue) RetryAfter() time.Duration { return q.cfg.MaxWait }

// Len is the number of requests waiting (read-only; tests and benchmarks).
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.depth
}

// Busy reports whether requests are waiting (a newcomer then queues behind them even if a
// route has room: turns are kept).
func (q *Queue) Busy() bool { return q.busy.Load() }

// Wait queues a request of account acct (weight: its turns' length, at least 1; class:
// the metrics label) until its turn comes and ready reports room, and returns how long it
// waited; ErrFull or ErrTimeout when it is refused instead.
func (q *Queue) Wait(ctx context.Context, acct string, weight int, class string, ready func() bool) (time.Duration, error) {
	start := time.Now()
	w := &waiter{ready: ready, ch: make(chan struct{})}
	q.mu.Lock()
	a := q.byAcct[acct]
	if a == nil {
		a = &account{id: acct}
		q.byAcct[acct] = a
	}
	if q.depth >= q.cfg.MaxDepth || a.q.Len() >= q.cfg.AccountDepth {
		q.mu.Unlock()
		q.refused.WithLabelValues(class, "full").Inc()
		return 0, ErrFull
	}
	a.weight = max(weight, 1)
	if a.q.Len() == 0 {
		q.ring = append(q.ring, a)
	}
	el := a.q.PushBack(w)
	q.depth++
	q.busy.Store(true)
	q.mu.Unlock()
	q.Kick() // it may go at once

	t := time.NewTimer(q.cfg.MaxWait)
	defer t.Stop()
	var err error
	select {
	case <-w.ch:
		q.pending.Add(-1)
	case <-t.C:
		err = ErrTimeout
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		q.mu.Lock()
		select {
		case <-w.ch: // granted meanwhile: take it
			q.pending.Add(-1)
			err = nil
		default:
			q.remove(a, el)
		}
		q.mu.Unlock()
	}
	d := time.Since(start)
	if err != nil {
		if errors.Is(err, ErrTimeout) {
			q.refused.WithLabelValues(class, "timeout").Inc()
		}
		return d, err
	}
	q.waited.WithLabelValues(class).Observe(d.Seconds())
	return d, nil
}

// remove takes el off a's queue (q.mu held).
func (q *Queue) remove(a *account, el *list.Element) {
	a.q.Remove(el)
	q.depth--
	q.busy.Store(q.depth > 0)
	if a.q.Len() == 0 {
		q.dropFromRing(a)
	}
}

func (q *Queue) dropFromRing(a *account) {
	for i, b := range q.ring {
		if b == a {
			q.ring = append(q.ring[:i], q.ring[i+1:]...)
			if q.next > i {
				q.next--
			}
			if q.next >= len(q.ring) {
				q.next = 0
			}
			a.served = 0
			return
		}
	}
}

// Kick lets at most one waiting request go: the first of the account whose turn it is,
// when its routes have room, else the next account's in turn. A finishing request calls
// it (one out, one in); Run calls it every Poll.
func (q *Queue) Kick() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending.Load() > 0 {
		return false // the last one let go is not dispatched yet
	}
	for range len(q.ring) {
		a := q.ring[q.next]
		w := a.q.Front().Value.(*waiter)
		if !w.ready() {
			q.advance(a)
			continue
		}
		q.pending.Add(1)
		close(w.ch)
		q.Granted.Add(1)
		a.served++
		a.q.Remove(a.q.Front())
		q.depth--
		q.busy.Store(q.depth > 0)
		if a.q.Len() == 0 {
			q.dropFromRing(a)
		} else if a.served >= a.weight {
			q.advance(a)
		}
		return true
	}
	return false
}

// advance passes the turn to the next account (q.mu held).
func (q *Queue) advance(a *account) {
	a.served = 0
	q.next++
	if q.next >= len(q.ring) {
		q.next = 0
	}
}

// Run kicks the queue every Poll until ctx ends (routes free up without a request of this
// node finishing: other nodes' requests, a fresh server report).
func (q *Queue) Run(ctx context.Context) {
	t := time.NewTicker(q.cfg.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			q.Kick()
		}
	}
}
