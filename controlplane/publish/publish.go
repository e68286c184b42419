// Package publish keeps the control plane's current snapshot and wakes waiting nodes.
//
// A Publisher listens on Postgres channel gateway_changed with a dedicated connection,
// debounces notifications (default 100 ms), recompiles the snapshot from the store and,
// when the version changed, wakes every long-poll waiting for a newer snapshot. It also
// relays gateway_balances notifications to balance watchers. After a (re)connection of the
// listener, and periodically as a safety net, it recompiles regardless of notifications.
//
// Every published snapshot is signed (ed25519, Config.Signer) with an issue time; the
// current one is re-issued (recompiled, re-signed) every Config.Reissue, so a node can tell
// how old its disk copy is.
//
// Several control planes may serve one database (replicas behind a load balancer). Each
// compiles the same versions (the store's version row), but not at the same moment: a
// node that got version N from one replica may poll another that still publishes N−1. Such
// a poll waits until a compile of this replica that started after it has finished, and is
// answered only when the node is still ahead then (its file is not from this database),
// so a node never steps back to an older version because it switched replicas.
//
// Routes that nodes would refuse (snapshot.Route.Validate) are
// left out of the snapshot with an error log, so one bad row cannot freeze every node.
package publish

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Store is what the publisher needs from the store (*store.Store implements it).
type Store interface {
	CompileSnapshot(ctx context.Context, defaults snapshot.Limits) (*snapshot.Snapshot, error)
	Listen(ctx context.Context, l store.Listener) error
}

// Config configures a Publisher.
type Config struct {
	// Store compiles snapshots and delivers notifications. Required.
	Store Store
	// Debounce is how long to gather change notifications before recompiling (default 100 ms).
	Debounce time.Duration
	// Resync recompiles this often even without notifications (default 30 s).
	Resync time.Duration
	// DefaultLimits go into every snapshot.
	DefaultLimits snapshot.Limits
	// RegionURLs go into every snapshot (snapshot.Content.RegionURLs): the base URL of the
	// region serving each residency policy, named by nodes in their residency refusals.
	// Checked by New (snapshot.CheckRegionURLs).
	RegionURLs map[string]string
	// Signer signs every snapshot. Nil publishes unsigned snapshots, which nodes refuse
	// unless started with --insecure-unsigned-snapshots (package tests only).
	Signer ed25519.PrivateKey
	// Reissue re-signs the current snapshot with a fresh issue time this often (default 1h);
	// it must be well under the nodes' --snapshot-max-age.
	Reissue time.Duration
	// Logger (default slog.Default()) and clock (default time.Now).
	Logger *slog.Logger
	Now    func() time.Time
	// Metrics receives compile times and published snapshots (default: none).
	Metrics Metrics
}

// Metrics receives the publisher's figures (the control plane's ops metrics implement it).
type Metrics interface {
	// SnapshotCompiled is called after every compile with its time and error.
	SnapshotCompiled(d time.Duration, err error)
	// SnapshotPublished is called when a snapshot (or a re-issue) replaces the current
	// one, with its version and the size of its JSON encoding.
	SnapshotPublished(version int64, size int)
}

type noMetrics struct{}

func (noMetrics) SnapshotCompiled(time.Duration, error) {}
func (noMetrics) SnapshotPublished(int64, int)          {}

// Current is a compiled, signed snapshot with its JSON encoding and the hash of its content
// without balances (snapshot.StructureHash).
type Current struct {
	Snapshot   *snapshot.Snapshot
	JSON       []byte
	StructHash string
}

// Have is what a node holds: the version, the structure hash it computed from the content
// it verified, and the issue time (Unix nanoseconds). Zero values mean "nothing". Country
// is the node's country: it is compared with the snapshot filtered for it (see Filter);
// empty means the unfiltered snapshot.
type Have struct {
	Version    int64
	StructHash string
	IssuedAt   int64
	Country    string
	// Protocol is the node's internal protocol version (internalapi.HeaderProtocol); 0 is
	// the current one.
	Protocol int
}

// Outdated reports whether the node should receive c: another version, another content at
// the same version (a stale or foreign file), or a newer issue of the same snapshot. A
// caller that sends no hash is compared by version only.
func (h Have) Outdated(c *Current) bool {
	if c.Snapshot.Version != h.Version {
		return true
	}
	return h.StructHash != "" && (h.StructHash != c.StructHash || c.Snapshot.IssuedAt.UnixNano() > h.IssuedAt)
}

// Publisher holds the current snapshot. Its methods are safe for concurrent use.
type Publisher struct {
	cfg  Config
	log  *slog.Logger
	kick chan struct{}

	mu       sync.Mutex
	cur      *Current
	changed  chan struct{} // closed when cur is replaced
	balances chan struct{} // closed on a balance notification
	// Refreshes are numbered as they start; done is the highest number of a finished,
	// successful one, and refreshed is closed when one finishes (see Wait).
	started, done int64
	refreshed     chan struct{}

	// variants caches variantsOf filtered per country (see variant).
	vmu        sync.Mutex
	variantsOf *Current
	variants   map[string]*Current
}

// New validates cfg and returns a Publisher; call Run to start it.
func New(cfg Config) (*Publisher, error) {
	if cfg.Store == nil {
		return nil, errors.New("publish: store is required")
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = 100 * time.Millisecond
	}
	if cfg.Resync <= 0 {
		cfg.Resync = 30 * time.Second
	}
	if cfg.Reissue <= 0 {
		cfg.Reissue = time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	if cfg.Signer != nil && len(cfg.Signer) != ed25519.PrivateKeySize {
		return nil, errors.New("publish: signer is not an ed25519 private key")
	}
	if err := snapshot.CheckRegionURLs(cfg.RegionURLs); err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	return &Publisher{
		cfg:       cfg,
		log:       cfg.Logger,
		kick:      make(chan struct{}, 1),
		changed:   make(chan struct{}),
		balances:  make(chan struct{}),
		refreshed: make(chan struct{}),
	}, nil
}

// Run listens and recompiles until ctx ends. It compiles once at start.
func (p *Publisher) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.cfg.Store.Listen(ctx, store.Listener{
			Channels:  []string{store.ChannelChanged, store.ChannelBalances},
			OnConnect: func() { p.Kick(); p.wakeBalances() },
			OnNotify: func(ch, _ string) {
				switch ch {
				case store.ChannelChanged:
					p.Kick()
				case store.ChannelBalances:
					p.wakeBalances()
				}
			},
		})
	}()
	defer wg.Wait()

	p.Kick()
	resync := time.NewTicker(p.cfg.Resync)
	defer resync.Stop()
	backoff := 100 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-resync.C:
		case <-p.kick:
			// Debounce: gather the notifications of a burst of changes into one compile.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(p.cfg.Debounce):
			}
			select {
			case <-p.kick:
			default:
			}
		}
		if err := p.Refresh(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			p.log.Error("snapshot compile failed; retrying", "err", err, "in", backoff)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
			p.Kick()
			continue
		}
		backoff = 100 * time.Millisecond
	}
}

// Kick asks for a recompile (debounced).
func (p *Publisher) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Refresh compiles now and publishes the result, signed, if its version or structure
// differs from the current one or the current one is due for re-issue.
func (p *Publisher) Refresh(ctx context.Context) error {
	p.mu.Lock()
	p.started++
	n := p.started
	p.mu.Unlock()
	if err := p.refresh(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = max(p.done, n)
	close(p.refreshed)
	p.refreshed = make(chan struct{})
	return nil
}

// awaitRefresh asks for a refresh and returns the number the next one to start will have.
func (p *Publisher) awaitRefresh() int64 {
	p.mu.Lock()
	n := p.started + 1
	p.mu.Unlock()
	p.Kick()
	return n
}

// refreshedSince reports whether refresh n (or a later one) has finished successfully, and
// if not returns a channel closed when the next one finishes.
func (p *Publisher) refreshedSince(n int64) (<-chan struct{}, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refreshed, p.done >= n
}

func (p *Publisher) refresh(ctx context.Context) error {
	start := time.Now()
	snap, err := p.cfg.Store.CompileSnapshot(ctx, p.cfg.DefaultLimits)
	p.cfg.Metrics.SnapshotCompiled(time.Since(start), err)
	if err != nil {
		return err
	}
	if err := p.complete(snap); err != nil {
		return err
	}
	structHash, err := snapshot.StructureHash(&snap.Content)
	if err != nil {
		return err
	}
	now := p.cfg.Now()
	if cur, _ := p.Current(); cur != nil {
		switch {
		case cur.Snapshot.Version > snap.Version:
			return nil // another compile got further
		case cur.Snapshot.Version == snap.Version && cur.StructHash == structHash && now.Sub(cur.Snapshot.IssuedAt) < p.cfg.Reissue:
			return nil
		}
	}
	snap.IssuedAt = now.UTC().Truncate(time.Microsecond)
	if p.cfg.Signer != nil {
		snap.Sign(p.cfg.Signer)
	}
	b, err := json.Marshal(snap)
	if err != nil {
		return fmt.Errorf("encode snapshot %d: %w", snap.Version, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != nil && p.cur.Snapshot.Version > snap.Version {
		return nil
	}
	reissue := p.cur != nil && p.cur.Snapshot.Version == snap.Version && p.cur.StructHash == structHash
	p.cur = &Current{Snapshot: snap, JSON: b, StructHash: structHash}
	close(p.changed)
	p.changed = make(chan struct{})
	p.cfg.Metrics.SnapshotPublished(snap.Version, len(b))
	if reissue {
		p.log.Debug("snapshot re-issued", "version", snap.Version, "issued_at", snap.IssuedAt)
		return nil
	}
	p.log.Info("snapshot published", "version", snap.Version, "hash", snap.Hash, "signed", p.cfg.Signer != nil,
		"accounts", len(snap.Accounts), "keys", len(snap.Keys), "models", len(snap.Models), "routes", len(snap.Routes))
	return nil
}

// complete adds the configured region URLs to a compiled snapshot, leaves out routes nodes
// would refuse (rows written before the admin API checked them with the same rules) and
// recomputes the hash when it changed anything.
func (p *Publisher) complete(snap *snapshot.Snapshot) error {
	changed := false
	if len(p.cfg.RegionURLs) > 0 {
		snap.RegionURLs = maps.Clone(p.cfg.RegionURLs)
		changed = true
	}
	kept := snap.Routes[:0:0]
	for i := range snap.Routes {
		if err := snap.Routes[i].Validate(); err != nil {
			p.log.Error("route left out of the snapshot: nodes would refuse it; fix it with the admin API",
				"route", snap.Routes[i].ID, "model", snap.Routes[i].Model, "err", err)
			continue
		}
		kept = append(kept, snap.Routes[i])
	}
	if len(kept) != len(snap.Routes) {
		snap.Routes, changed = kept, true
	}
	if !changed {
		return nil
	}
	h, err := snapshot.ComputeHash(&snap.Content)
	if err != nil {
		return err
	}
	snap.Hash = h
	return nil
}

// Current returns the current snapshot (nil before the first compile) and a channel
// closed when it is replaced.
func (p *Publisher) Current() (*Current, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur, p.changed
}

// Wait returns the current snapshot, filtered for have.Country, as soon as have is outdated
// by it (Have.Outdated), or nil when it was not before ctx ended or wait passed. Filtered
// variants are built once per country and snapshot, so polls stay cheap.
//
// A node holding a newer version than the current one got it from another replica that
// compiled first: Wait asks for a refresh and answers only after one that started after
// the poll has finished, so the node gets that version or a newer one, not this replica's
// older one. If the node is still ahead then, its snapshot is not from this database (a
// restored database, a foreign file): it gets the current one.
func (p *Publisher) Wait(ctx context.Context, have Have, wait time.Duration) *Current {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var need int64 // the refresh to wait for while the node is ahead; 0: none asked for
	for {
		cur, changed := p.Current()
		var refreshed <-chan struct{}
		if cur != nil {
			v, err := p.variant(cur, have.Country, have.Protocol)
			switch {
			case err != nil:
				// Never the unfiltered snapshot instead: wait for the next one.
				p.log.Error("filter snapshot for a node's country", "version", cur.Snapshot.Version, "country", have.Country, "err", err)
			case have.Version > v.Snapshot.Version:
				if need == 0 {
					need = p.awaitRefresh()
				}
				var caughtUp bool
				if refreshed, caughtUp = p.refreshedSince(need); caughtUp {
					return v
				}
			case have.Outdated(v):
				return v
			}
		}
		select {
		case <-refreshed:
		case <-changed:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// BalanceSignal returns a channel closed at the next balance notification.
func (p *Publisher) BalanceSignal() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.balances
}

func (p *Publisher) wakeBalances() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.balances)
	p.balances = make(chan struct{})
}
