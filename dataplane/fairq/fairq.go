// Package fairq holds requests when every route that could serve them is saturated, in
// one FIFO queue per account, and lets them go in turn: weighted round robin over the
// accounts with requests waiting, so an account sending a burst waits behind its own
// requests, not in front of everyone else's. A request leaves the queue when its turn
// comes and its routes have room (a request finishing, or a poll, lets one go), or is
// refused when its account's queue or the whole queue is full or when it has waited
// MaxWait.
//
// Turns alone do not keep a light account's latency: when the servers are full, its
// request still waits for the next slot to free, behind no one but at the pace the
// heavy account's long requests end. So an account with more than its weighted share of the
// servers' slots in flight (a heavy one) starts only while more than a reserve of slots is
// free: the most that any other account had in flight within Remember and does not have
// now, up to that account's share (adaptive: what the others recently used), and at least
// Headroom. Shares are of the fleet's servers: with the fleet exchange, an account's
// requests in flight on the other nodes count with its own here (fleet.go). An account
// that was alone and
// took every slot first thus leaves its absent peers' recent use free once it is over
// its share, and a peer that comes back finds a slot at once. While a light account
// waits, a heavy one's waiting requests are not let go (max-min over the slots held, not
// only over the queue). Nor does a heavy account take a server's last free slot: it starts
// only when some server has a slot beyond its last (Space.Spare), and goes there
// (routing.Request.Heavy), so a light account's request finds a slot where its prefix is
// cached rather than a cold one elsewhere. In a fleet, the requests of such an account that
// the nodes hold go on each node's turns of those slots (turn.go).
package fairq

import (
	"container/list"
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sekgate/gateway/internal/flagenv"
)

// Refusals.
var (
	ErrFull    = errors.New("fairq: queue full")
	ErrTimeout = errors.New("fairq: waited too long")
)

// Config configures a Queue. Zero fields take the defaults noted.
type Config struct {
	// MaxWait bounds a request's wait.
	MaxWait time.Duration `flag:"fair-queue-max-wait" default:"5s" help:"longest wait in the fair queue before 429"`
	// MaxDepth bounds the requests waiting in all, AccountDepth those of one account.
	MaxDepth     int `flag:"fair-queue-depth" default:"1024" help:"requests the fair queue holds in all before 429"`
	AccountDepth int `flag:"fair-queue-account-depth" default:"64" help:"requests the fair queue holds per account before 429"`
	// Poll is how often a waiting request's routes are looked at again when no request
	// finishes.
	Poll time.Duration `default:"20ms"`
	// Headroom is how many free slots an account above its share leaves for the others
	// (negative: none), at most an eighth of the servers' known capacity.
	Headroom int `flag:"fair-queue-headroom" default:"2" help:"free slots an account above its share leaves for the others (negative: none)"`
	// Linger is how long an account counts as active after its last request, for the
	// shares; Forget when its state is dropped.
	Linger time.Duration `default:"2s"`
	Forget time.Duration `default:"10m"`
	// Remember is how long an account's most requests in flight are reserved for it
	// against heavier accounts after it used them (negative: not at all).
	Remember time.Duration `default:"1m"`
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Queue is the node's fair queue. The zero value is not usable; see New.
type Queue struct {
	cfg Config

	flows sync.Map // account ID → *Flow
	// inFlight counts every flow's requests in flight; activeWeight is the weight of the
	// flows active within Linger or holding a reserve; reserve and reserve2 are the largest
	// two reserves of the flows (what each used within Remember and does not use now, up
	// to its share), reserveOf the flow of the largest (refresh).
	inFlight, activeWeight, reserve, reserve2 atomic.Int64
	reserveOf                                 atomic.Pointer[Flow]
	// othersIn is the flows' requests in flight on the other nodes, fleetUntil (unix ns)
	// when the fleet's counts lapse unless an answer renews them (0: none held); fleetMu
	// orders SetFleet and expireFleet (fleet.go).
	othersIn, fleetUntil atomic.Int64
	fleetMu              sync.Mutex
	// nodes is the live nodes of the fleet answer held (1 without one), rank this node's
	// place among them (1 to nodes; 0 unknown).
	nodes, rank atomic.Int64

	mu    sync.Mutex
	ring  []*Flow // flows with requests waiting, in turn order
	next  int     // whose turn it is
	depth int
	// busy mirrors depth > 0 for Busy, which every request asks.
	busy atomic.Bool
	// capacity is the servers' capacity the last request saw (float64 bits), which bounds
	// the flows' reserves (refresh).
	capacity atomic.Uint64

	waited  *prometheus.HistogramVec
	refused *prometheus.CounterVec
	// Granted counts requests let go after waiting (tests, benchmarks).
	Granted atomic.Int64
	// pending counts requests let go that have not resumed yet: until they are dispatched
	// their routes' load does not show them, so no other goes meanwhile.
	pending atomic.Int64
}

// Space is what the servers of a request's routes can take now (routing.Selector.Room).
type Space struct {
	// Free is how many more requests they can start (this node's part of them in a fleet);
	// Spare the same beyond each server's last free slot, which an account above its share
	// leaves to the others; Capacity their known slots (0: unknown).
	Free, Spare, Capacity float64
	// Reported is Free as the servers' last reports showed it, before this node's part
	// and its own requests since, ReportedAt when the oldest of those reports was read
	// (unix ns), and Started the requests this node started on those servers since.
	// SpareTurns is this node's turns (Turn) of the slots beyond each server's last free
	// one those reports showed, less its requests started there since; NaN when the node
	// takes no turns (alone, its place in the fleet unknown, or a server's capacity).
	Reported, Started, SpareTurns float64
	ReportedAt                    int64
	// Split is how many nodes' parts Free and Spare are one of (0 or 1: the whole; a node
	// that hears the others' starts as they happen takes the whole).
	Split float64
}

// Room says what the servers of a request's routes can take now.
type Room func() Space

type waiter struct {
	room Room
	ch   chan struct{}
	// turns says the request was let go on this node's turns (set before ch closes).
	turns bool
}

// New returns a Queue with cfg's defaults filled.
func New(cfg Config) *Queue {
	cfg.MaxWait, cfg.Poll, cfg.Linger, cfg.Forget = max(cfg.MaxWait, 0), max(cfg.Poll, 0), max(cfg.Linger, 0), max(cfg.Forget, 0)
	cfg.MaxDepth, cfg.AccountDepth = max(cfg.MaxDepth, 0), max(cfg.AccountDepth, 0)
	flagenv.MustDefaults(&cfg) // the default tags; a negative Headroom or Remember stays (none)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	q := &Queue{cfg: cfg,
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
	q.nodes.Store(1)
	return q
}

func (q *Queue) now() time.Time { return q.cfg.Now() }

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

// Admit reports whether a request of flow f may start at once in its routes' space s:
// nobody waits, and there is room for it (beyond the headroom when f is heavy).
func (q *Queue) Admit(f *Flow, s Space) bool {
	if q.Busy() {
		return false
	}
	ok, _ := q.roomFor(f, s, false)
	return ok
}

// Heavy reports whether flow f has more than one request and more than its share of the
// servers' slots in flight (by the capacity the last request saw): its requests then
// leave each server's last free slot to the others (routing.Request.Heavy). One request
// never makes an account heavy here (Flow.leavesLastSlots).
func (q *Queue) Heavy(f *Flow) bool {
	return f.leavesLastSlots(math.Float64frombits(q.capacity.Load()))
}

// roomFor reports whether space s lets a request of f start (queued: let go from the
// queue, not at its arrival): any free slot when f is within its share; when f is heavy, more
// free than the others' reserve (at most what f's share leaves them) and Headroom (at most
// an eighth of capacity), and, with more than one request in flight (Heavy), a slot beyond
// some server's last. A node of a fleet counts its part of those, or, queued, its turns
// (onTurns: whether the answer was by its turns).
func (q *Queue) roomFor(f *Flow, s Space, queued bool) (ok, onTurns bool) {
	free, capacity := s.Free, s.Capacity
	if free <= 0 {
		return false, false
	}
	if capacity > 0 && math.Float64frombits(q.capacity.Load()) != capacity {
		q.capacity.Store(math.Float64bits(capacity))
	}
	if !f.heavy(capacity) {
		return true, false
	}
	keep := q.keepFor(f, capacity)
	if queued && q.takesTurns(s) {
		return q.inTurn(f, s, keep, capacity), true
	}
	if s.Spare <= 0 && f.leavesLastSlots(capacity) {
		return false, false // each server's last free slot is the others'
	}
	if n := s.Split; n > 1 {
		// free is this node's part of the servers' free slots (a 1/n share of a report's,
		// less its own starts since): each node keeping its 1/n of keep, the fleet keeps it.
		keep /= n
	}
	return free > keep, false
}

// keepFor is what a heavy flow f leaves free of capacity: the others' reserve (at most
// what f's share leaves them) and Headroom (at most an eighth of capacity).
func (q *Queue) keepFor(f *Flow, capacity float64) float64 {
	keep := min(float64(q.cfg.Headroom), math.Floor(capacity/8))
	if r := q.reserveFor(f); r > 0 {
		if active := q.activeWeight.Load(); active > 0 {
			left := math.Floor(capacity * float64(active-f.weight.Load()) / float64(active))
			keep = max(keep, min(float64(r), left))
		}
	}
	return keep
}

// Grant is how a waiting request was let go: after how long, and whether on this node's
// turns (turn.go); its route is then one where the node has a turn (routing.Request.Turns).
type Grant struct {
	Waited time.Duration
	Turns  bool
}

// Wait queues a request of flow f (class: the metrics label) until its turn comes and
// room reports space for it, and says how it was let go; ErrFull or ErrTimeout (with how
// long it waited) when it is refused instead.
func (q *Queue) Wait(ctx context.Context, f *Flow, class string, room Room) (Grant, error) {
	start := time.Now()
	w := &waiter{room: room, ch: make(chan struct{})}
	q.mu.Lock()
	if q.depth >= q.cfg.MaxDepth || f.waiting.Len() >= q.cfg.AccountDepth {
		q.mu.Unlock()
		q.refused.WithLabelValues(class, "full").Inc()
		return Grant{}, ErrFull
	}
	if f.waiting.Len() == 0 {
		q.ring = append(q.ring, f)
	}
	el := f.waiting.PushBack(w)
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
			q.remove(f, el)
		}
		q.mu.Unlock()
	}
	d := time.Since(start)
	if err != nil {
		if errors.Is(err, ErrTimeout) {
			q.refused.WithLabelValues(class, "timeout").Inc()
		}
		return Grant{Waited: d}, err
	}
	q.waited.WithLabelValues(class).Observe(d.Seconds())
	return Grant{Waited: d, Turns: w.turns}, nil
}

// remove takes el off f's queue (q.mu held).
func (q *Queue) remove(f *Flow, el *list.Element) {
	f.waiting.Remove(el)
	q.depth--
	q.busy.Store(q.depth > 0)
	if f.waiting.Len() == 0 {
		q.dropFromRing(f)
	}
}

func (q *Queue) dropFromRing(f *Flow) {
	for i, b := range q.ring {
		if b == f {
			q.ring = append(q.ring[:i], q.ring[i+1:]...)
			if q.next > i {
				q.next--
			}
			if q.next >= len(q.ring) {
				q.next = 0
			}
			f.served = 0
			return
		}
	}
}

// Kick lets at most one waiting request go: the first of the account whose turn it is,
// when its routes have room for it, else the next account's in turn. A finishing request
// calls it (one out, one in); Run calls it every Poll.
func (q *Queue) Kick() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending.Load() > 0 {
		return false // the last one let go is not dispatched yet
	}
	if len(q.ring) == 0 {
		return false
	}
	// A pass that lets nothing go leaves the turn where it was. While a light account
	// waits, a heavy one's turn is passed.
	n0, s0 := q.next, q.ring[q.next].served
	capacity := math.Float64frombits(q.capacity.Load())
	lightWaits := false
	for _, f := range q.ring {
		lightWaits = lightWaits || !f.heavy(capacity)
	}
	for range len(q.ring) {
		f := q.ring[q.next]
		w := f.waiting.Front().Value.(*waiter)
		if lightWaits && f.heavy(capacity) {
			q.advance(f)
			continue
		}
		ok, onTurns := q.roomFor(f, w.room(), true) // let go from the queue: on turns (turn.go)
		if !ok {
			q.advance(f)
			continue
		}
		w.turns = onTurns
		q.pending.Add(1)
		close(w.ch)
		q.Granted.Add(1)
		f.served++
		q.remove(f, f.waiting.Front())
		if f.waiting.Len() > 0 && int64(f.served) >= f.weight.Load() {
			q.advance(f)
		}
		return true
	}
	q.next, q.ring[n0].served = n0, s0
	return false
}

// advance passes the turn to the next account (q.mu held).
func (q *Queue) advance(f *Flow) {
	f.served = 0
	q.next++
	if q.next >= len(q.ring) {
		q.next = 0
	}
}

// refreshEvery is how often Run recomputes the active flows' weight.
const refreshEvery = 100 * time.Millisecond

// Run kicks the queue every Poll until ctx ends (routes free up without a request of this
// node finishing: other nodes' requests, a fresh server report).
func (q *Queue) Run(ctx context.Context) {
	t := time.NewTicker(q.cfg.Poll)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if now := q.now(); now.Sub(last) >= refreshEvery {
				q.refresh(now)
				last = now
			}
			q.Kick()
		}
	}
}
