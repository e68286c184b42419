package routing

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/internal/flagenv"
	"github.com/sekgate/gateway/shared/snapshot"
)

// HealthConfig configures the per-route circuit breakers. Zero fields take the defaults
// noted.
type HealthConfig struct {
	// ConsecutiveFailures opens a route's breaker after this many failures in a row.
	ConsecutiveFailures int `flag:"breaker-failures" default:"5" help:"consecutive failures that open a route's circuit breaker"`
	// FailureRatio and MinRequests also open it when, within Window, at least MinRequests
	// attempts were made and at least FailureRatio of them failed.
	FailureRatio float64 `default:"0.5"`
	MinRequests  int     `default:"20"`
	// Window is how long the closed state accumulates counts before clearing them (10
	// buckets, rolling).
	Window time.Duration `default:"30s"`
	// OpenFor is how long an open breaker refuses attempts before letting probes through
	// (half-open).
	OpenFor time.Duration `flag:"breaker-open" default:"10s" help:"how long an open breaker skips its route before a probe"`
	// Probes is how many concurrent attempts a half-open breaker lets through; that many
	// successes in a row close it, one failure opens it again.
	Probes int `default:"1"`
	Logger *slog.Logger
	// OnStateChange, when set, is called when a route's breaker changes state, with the
	// route ID and the states' names ("closed", "half-open", "open") (metrics).
	OnStateChange func(route, from, to string)
}

// fill sets the defaults (the fields' default tags) of the fields left zero or negative, and
// of a ratio outside (0, 1].
func (c *HealthConfig) fill() {
	c.ConsecutiveFailures, c.MinRequests, c.Probes = max(c.ConsecutiveFailures, 0), max(c.MinRequests, 0), max(c.Probes, 0)
	c.Window, c.OpenFor = max(c.Window, 0), max(c.OpenFor, 0)
	if c.FailureRatio < 0 || c.FailureRatio > 1 {
		c.FailureRatio = 0
	}
	flagenv.MustDefaults(c)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Outcomes an attempt reports to Health.Do besides nil (healthy).
var (
	// ErrRouteFailed: the route failed (connect error, timeout, 5xx, invalid answer).
	ErrRouteFailed = errors.New("routing: route failed")
	// ErrUnreachable: the route failed before any exchange: the node could not connect to
	// its server (refused, or no answer to the connect). Counted as ErrRouteFailed; the
	// breaker remembers it (Unreachable).
	ErrUnreachable = errors.New("routing: route unreachable")
	// ErrNeutral: the attempt says nothing about the route's health (the client went away,
	// this node's own connection pool was full, a credential is missing on this node, the
	// provider rate-limited the request with 429).
	ErrNeutral = errors.New("routing: outcome not counted")
	// ErrOpen: the route's breaker refused the attempt; fn was not called.
	ErrOpen = errors.New("routing: route circuit open")
)

// Health keeps one circuit breaker (github.com/sony/gobreaker/v2) per upstream route,
// keyed by route ID and base URL, so breaker state survives snapshot swaps while a route
// whose address changed starts fresh. The zero value is not usable; see NewHealth.
type Health struct {
	cfg HealthConfig
	// mu guards byKey; the request path finds a route's breaker in its BreakerMemo.
	mu     sync.Mutex
	byKey  map[routeKey]*breaker
	opened atomic.Int64
}

type routeKey struct{ id, baseURL string }

type breaker struct {
	cb    *gobreaker.CircuitBreaker[struct{}]
	owner *Health
	// unreachable: the route's last counted outcome was ErrUnreachable.
	unreachable atomic.Bool
}

// NewHealth returns a Health with cfg's defaults filled.
func NewHealth(cfg HealthConfig) *Health {
	cfg.fill()
	return &Health{cfg: cfg, byKey: make(map[routeKey]*breaker)}
}

// RetryAfter is the longest a caller waits before an open breaker lets a probe through.
func (h *Health) RetryAfter() time.Duration { return h.cfg.OpenFor }

// Opened counts breaker openings since start (metrics, tests).
func (h *Health) Opened() int64 { return h.opened.Load() }

func (h *Health) breaker(r *index.Route) *breaker {
	if b, ok := r.BreakerMemo.Load().(*breaker); ok && b.owner == h {
		return b
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	k := routeKey{r.ID, r.BaseURL}
	b := h.byKey[k]
	if b == nil {
		b = h.newBreaker(r.ID)
		h.byKey[k] = b
	}
	r.BreakerMemo.Store(b)
	return b
}

func (h *Health) newBreaker(name string) *breaker {
	cfg := h.cfg
	return &breaker{owner: h, cb: gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         name,
		MaxRequests:  uint32(cfg.Probes),
		Interval:     cfg.Window,
		BucketPeriod: cfg.Window / 10,
		Timeout:      cfg.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			if c.ConsecutiveFailures >= uint32(cfg.ConsecutiveFailures) {
				return true
			}
			return c.Requests >= uint32(cfg.MinRequests) &&
				float64(c.TotalFailures) >= cfg.FailureRatio*float64(c.Requests)
		},
		IsSuccessful: func(err error) bool { return err == nil },
		IsExcluded:   func(err error) bool { return err == ErrNeutral },
		OnStateChange: func(name string, from, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				h.opened.Add(1)
			}
			if cfg.OnStateChange != nil {
				cfg.OnStateChange(name, from.String(), to.String())
			}
			if cfg.Logger.Enabled(context.Background(), slog.LevelInfo) {
				cfg.Logger.Info("route health changed", "route", name, "from", from.String(), "to", to.String())
			}
		},
	})}
}

// Do runs one attempt on route r through its breaker. fn returns nil when the route
// answered healthily (a client error such as 400 included), ErrNeutral when the outcome
// says nothing about the route, anything else when the route failed. Do returns ErrOpen
// without calling fn while the breaker refuses attempts (open, or half-open with its
// probes in flight); otherwise it returns fn's error.
func (h *Health) Do(r *index.Route, fn func() error) error {
	b := h.breaker(r)
	_, err := b.cb.Execute(func() (struct{}, error) { return struct{}{}, fn() })
	if err == gobreaker.ErrOpenState || err == gobreaker.ErrTooManyRequests {
		return ErrOpen
	}
	if err != ErrNeutral {
		if u := err == ErrUnreachable; b.unreachable.Load() != u {
			b.unreachable.Store(u)
		}
	}
	return err
}

// Unreachable reports whether route r's last counted attempt could not connect to its
// server (ErrUnreachable): with its breaker open, the route is known unreachable rather
// than busy or recovering.
func (h *Health) Unreachable(r *index.Route) bool { return h.breaker(r).unreachable.Load() }

// Closed reports whether route r's breaker is closed (the route is taking requests).
func (h *Health) Closed(r *index.Route) bool {
	return h.breaker(r).cb.State() == gobreaker.StateClosed
}

// State names the breaker state of route r: "closed", "half-open" or "open".
func (h *Health) State(r *index.Route) string { return h.breaker(r).cb.State().String() }

// EachState calls fn with the route ID and state name of every breaker (metrics); a route
// ID whose base URL changed may appear more than once.
func (h *Health) EachState(fn func(route, state string)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, b := range h.byKey {
		fn(k.id, b.cb.State().String())
	}
}

// Retain forgets the breakers of the replicas of discovered routes (IDs
// "<route>@<ip:port>") that live no longer names: a replica gone from DNS is not reported
// as open forever, and pods coming and going do not grow the map. Requests still running
// on a forgotten replica keep its breaker through their route's memo. Other routes'
// breakers are kept, as before.
func (h *Health) Retain(live func(id, baseURL string) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k := range h.byKey {
		if _, _, replica := snapshot.SplitReplicaID(k.id); replica && !live(k.id, k.baseURL) {
			delete(h.byKey, k)
		}
	}
}
