// Package discovery keeps the replicas of the routes discovered from DNS
// (snapshot.Route.Discovery): it re-resolves each such route every Interval and, when a
// route's replicas changed, installs an index with the route expanded into one route per
// replica (index.BuildReplicas). Nothing is rebuilt while the answers stay the same.
//
// A replica gone from DNS is gone from the next index at once: new requests no longer
// pick it, while requests already running on it hold the old index's route and finish.
// A lookup that fails keeps the route's last good replicas (logged once until it
// succeeds again): DNS being down says nothing about the servers. An empty answer (no
// records, or NXDOMAIN: no pod ready) keeps them for EmptyGrace, so that a moment without
// ready pods in a rollout, or a DNS server answering before it has synced, does not empty
// the route; past it the route has no replica and serves nothing until records return.
package discovery

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Defaults of Config.
const (
	DefaultInterval   = 5 * time.Second
	DefaultEmptyGrace = 30 * time.Second
	DefaultTimeout    = 2 * time.Second
)

// Config configures a Discoverer. Zero fields take the defaults noted.
type Config struct {
	// Store holds the node's index; the Discoverer reads the discovered routes from it and
	// installs rebuilt indexes into it (required).
	Store *index.Store
	// Build builds an index of s with replicas (required; the node's builds key the cache
	// salts, see index.BuildReplicas).
	Build func(s *snapshot.Snapshot, replicas index.Replicas) (*index.Index, error)
	// Resolver looks the names up (default net.DefaultResolver).
	Resolver Resolver
	// Interval between resolves of every discovered route (default 5s).
	Interval time.Duration
	// EmptyGrace is how long an empty answer keeps a route's last good replicas (default
	// 30s; negative: none).
	EmptyGrace time.Duration
	// Timeout bounds the lookups of one route (default 2s).
	Timeout time.Duration
	Logger  *slog.Logger
	// OnInstall, when set, is called with each index the Discoverer installed (the node
	// forgets the breakers and load state of replicas gone).
	OnInstall func(*index.Index)
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Discoverer keeps the discovered routes' replicas; see Run.
type Discoverer struct {
	cfg  Config
	wake chan struct{}

	mu     sync.Mutex
	routes map[string]*route // by route ID
	want   index.Replicas    // the replicas of the last resolve
}

// route is what the Discoverer knows of one discovered route.
type route struct {
	name       string // discovery and base URL: a route whose name changed starts over
	good       []index.Replica
	emptySince time.Time // when answers started coming back empty; zero otherwise
	failing    bool      // the last lookup failed (logged once)
}

// New returns a Discoverer with cfg's defaults filled.
func New(cfg Config) *Discoverer {
	if cfg.Resolver == nil {
		cfg.Resolver = NewResolver("")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.EmptyGrace == 0 {
		cfg.EmptyGrace = DefaultEmptyGrace
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Discoverer{cfg: cfg, wake: make(chan struct{}, 1), routes: map[string]*route{}}
}

// Replicas returns the replicas of the last resolve, for an index built from a new
// snapshot (the node's syncclient build). Shared: must not be modified.
func (d *Discoverer) Replicas() index.Replicas {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.want
}

// Wake makes Run resolve at once (a new snapshot may name new discovered routes).
func (d *Discoverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run resolves every Interval, and when woken, until ctx ends.
func (d *Discoverer) Run(ctx context.Context) {
	t := time.NewTicker(d.cfg.Interval)
	defer t.Stop()
	for {
		d.Resolve(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.wake:
		}
	}
}

// Resolve looks every discovered route of the current index up once and installs a
// rebuilt index when their replicas changed.
func (d *Discoverer) Resolve(ctx context.Context) {
	x := d.cfg.Store.Load()
	if x == nil {
		return
	}
	routes := x.Discovered()
	found := make([][]index.Replica, len(routes))
	errs := make([]error, len(routes))
	var wg sync.WaitGroup
	for i := range routes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
			defer cancel()
			found[i], errs[i] = lookup(lctx, d.cfg.Resolver, &routes[i])
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	want := d.update(routes, found, errs)
	d.install(want)
}

// update folds one resolve's answers into each route's last good replicas and returns
// the replicas to serve.
func (d *Discoverer) update(routes []snapshot.Route, found [][]index.Replica, errs []error) index.Replicas {
	now := d.cfg.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	want := make(index.Replicas, len(routes))
	seen := make(map[string]bool, len(routes))
	for i := range routes {
		r := &routes[i]
		seen[r.ID] = true
		st := d.routes[r.ID]
		if name := r.Discovery + " " + r.BaseURL; st == nil || st.name != name {
			st = &route{name: name}
			d.routes[r.ID] = st
		}
		if reps := d.next(st, r, found[i], errs[i], now); len(reps) > 0 {
			want[r.ID] = reps
		}
	}
	for id := range d.routes {
		if !seen[id] {
			delete(d.routes, id)
		}
	}
	d.want = want
	return want
}
