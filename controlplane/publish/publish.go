// Package publish keeps the control plane's current snapshot and wakes waiting nodes.
//
// A Publisher listens on Postgres channel gateway_changed with a dedicated connection,
// debounces notifications (default 100 ms), recompiles the snapshot from the store and,
// when the version changed, wakes every long-poll waiting for a newer snapshot. It also
// relays gateway_balances notifications to balance watchers. After a (re)connection of the
// listener, and periodically as a safety net, it recompiles regardless of notifications.
package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Current is a compiled snapshot with its JSON encoding.
type Current struct {
	Snapshot *snapshot.Snapshot
	JSON     []byte
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
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Publisher{
		cfg:      cfg,
		log:      cfg.Logger,
		kick:     make(chan struct{}, 1),
		changed:  make(chan struct{}),
		balances: make(chan struct{}),
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

// Refresh compiles now and publishes the result if its version differs.
func (p *Publisher) Refresh(ctx context.Context) error {
	snap, err := p.cfg.Store.CompileSnapshot(ctx, p.cfg.DefaultLimits)
	if err != nil {
		return err
	}
	b, err := json.Marshal(snap)
	if err != nil {
		return fmt.Errorf("encode snapshot %d: %w", snap.Version, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != nil && p.cur.Snapshot.Version >= snap.Version {
		return nil
	}
	p.cur = &Current{Snapshot: snap, JSON: b}
	close(p.changed)
	p.changed = make(chan struct{})
	p.log.Info("snapshot published", "version", snap.Version, "hash", snap.Hash,
		"accounts", len(snap.Accounts), "keys", len(snap.Keys), "models", len(snap.Models), "routes", len(snap.Routes))
	return nil
}

// Current returns the current snapshot (nil before the first compile) and a channel
// closed when it is replaced.
func (p *Publisher) Current() (*Current, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur, p.changed
}

// Wait returns the current snapshot as soon as its version differs from have, or nil
// when none did before ctx ended or wait passed.
func (p *Publisher) Wait(ctx context.Context, have int64, wait time.Duration) *Current {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		cur, changed := p.Current()
		if cur != nil && cur.Snapshot.Version != have {
			return cur
		}
		select {
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
