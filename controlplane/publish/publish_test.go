package publish

import (
	"context"
	"crypto/ed25519"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/snapshot"
)

// scriptStore compiles the snapshot it holds (version and routes settable) and delivers
// notifications the test sends.
type scriptStore struct {
	mu       sync.Mutex
	version  int64
	routes   []snapshot.Route
	fail     error
	compiles int
	notify   chan string // channel names to deliver as notifications
	listened chan struct{}
}

func newScriptStore(version int64) *scriptStore {
	return &scriptStore{version: version, notify: make(chan string), listened: make(chan struct{}),
		routes: []snapshot.Route{{ID: "r1", Model: "m", BaseURL: "http://10.0.0.1:8000/v1"}}}
}

func (s *scriptStore) set(version int64, routes ...snapshot.Route) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version = version
	if routes != nil {
		s.routes = routes
	}
}

func (s *scriptStore) CompileSnapshot(context.Context, snapshot.Limits) (*snapshot.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compiles++
	if s.fail != nil {
		return nil, s.fail
	}
	snap := &snapshot.Snapshot{Version: s.version, Content: snapshot.Content{
		Models: []snapshot.Model{{ID: "m"}},
		Routes: append([]snapshot.Route(nil), s.routes...),
	}}
	snap.Hash, _ = snapshot.ComputeHash(&snap.Content)
	return snap, nil
}

func (s *scriptStore) Listen(ctx context.Context, l store.Listener) error {
	l.OnConnect()
	close(s.listened)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ch := <-s.notify:
			l.OnNotify(ch, "")
		}
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestHaveOutdated(t *testing.T) {
	issued := time.Unix(1000, 0)
	cur := &Current{Snapshot: &snapshot.Snapshot{Version: 5, IssuedAt: issued}, StructHash: "h"}
	for _, c := range []struct {
		name string
		have Have
		want bool
	}{
		{"nothing", Have{}, true},
		{"older version", Have{Version: 4, StructHash: "h", IssuedAt: issued.UnixNano()}, true},
		{"newer version (a restored database)", Have{Version: 6}, true},
		{"same, version only", Have{Version: 5}, false},
		{"same", Have{Version: 5, StructHash: "h", IssuedAt: issued.UnixNano()}, false},
		{"foreign content at the version", Have{Version: 5, StructHash: "other", IssuedAt: issued.UnixNano()}, true},
		{"older issue", Have{Version: 5, StructHash: "h", IssuedAt: issued.UnixNano() - 1}, true},
	} {
		if got := c.have.Outdated(cur); got != c.want {
			t.Errorf("%s: Outdated = %v, want %v", c.name, got, c.want)
		}
	}
}

// Refresh publishes a new version or structure, and the same one again only when it is due
// for re-issue; an older compile never replaces a newer snapshot; every published one is
// signed; a route nodes would refuse is left out and the hash still verifies.
func TestRefreshPublishesChangesAndReissues(t *testing.T) {
	ctx := context.Background()
	pub, key, _ := ed25519.GenerateKey(nil)
	st := newScriptStore(1)
	now := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	p, err := New(Config{Store: st, Signer: key, Reissue: time.Hour, Logger: quiet(), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if cur, _ := p.Current(); cur != nil {
		t.Fatal("a snapshot before the first compile")
	}
	if err := p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	first, changed := p.Current()
	if first.Snapshot.Version != 1 || !first.Snapshot.IssuedAt.Equal(now) || first.Snapshot.VerifySigned(pub) != nil {
		t.Fatalf("first: %+v", first.Snapshot)
	}
	published := func() bool {
		select {
		case <-changed:
			_, changed = p.Current()
			return true
		default:
			return false
		}
	}
	// Same version and structure, not due: nothing published.
	now = now.Add(30 * time.Minute)
	if err := p.Refresh(ctx); err != nil || published() {
		t.Fatalf("unchanged snapshot published again (err %v)", err)
	}
	// Due for re-issue: the same content with a fresh issue time.
	now = now.Add(31 * time.Minute)
	if err := p.Refresh(ctx); err != nil || !published() {
		t.Fatalf("re-issue not published (err %v)", err)
	}
	if cur, _ := p.Current(); !cur.Snapshot.IssuedAt.Equal(now) || cur.Snapshot.Version != 1 || cur.Snapshot.VerifySigned(pub) != nil {
		t.Fatalf("re-issue: %+v", cur.Snapshot)
	}
	// A new version with a route nodes would refuse: published without it.
	st.set(2, snapshot.Route{ID: "r1", Model: "m", BaseURL: "http://10.0.0.1:8000/v1"}, snapshot.Route{ID: "bad", Model: "m", BaseURL: "ftp://x"})
	if err := p.Refresh(ctx); err != nil || !published() {
		t.Fatalf("version 2 not published (err %v)", err)
	}
	cur, _ := p.Current()
	if cur.Snapshot.Version != 2 || len(cur.Snapshot.Routes) != 1 || cur.Snapshot.Routes[0].ID != "r1" || cur.Snapshot.VerifySigned(pub) != nil {
		t.Fatalf("version 2: %+v", cur.Snapshot)
	}
	// A compile that got less far never replaces it.
	st.set(1)
	if err := p.Refresh(ctx); err != nil || published() {
		t.Fatalf("older version replaced the current one (err %v)", err)
	}
	// A failing compile is the caller's error and changes nothing.
	st.fail = errors.New("database down")
	if err := p.Refresh(ctx); err == nil || published() {
		t.Fatalf("failed compile: err %v", err)
	}
}

// Wait answers at once when the node is outdated, otherwise as soon as a newer snapshot is
// published, and nil when the wait ends first.
func TestWait(t *testing.T) {
	ctx := context.Background()
	st := newScriptStore(3)
	p, err := New(Config{Store: st, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if c := p.Wait(ctx, Have{Version: 2}, time.Hour); c == nil || c.Snapshot.Version != 3 {
		t.Fatalf("outdated node: %v", c)
	}
	if c := p.Wait(ctx, Have{Version: 3}, time.Millisecond); c != nil {
		t.Fatalf("current node got %d", c.Snapshot.Version)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if c := p.Wait(cctx, Have{Version: 3}, time.Hour); c != nil {
		t.Fatal("Wait answered after its context ended")
	}
	got := make(chan *Current, 1)
	go func() { got <- p.Wait(ctx, Have{Version: 3}, time.Hour) }()
	st.set(4)
	if err := p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if c := <-got; c == nil || c.Snapshot.Version != 4 {
		t.Fatalf("waiting node: %v", c)
	}
}

// A node that got a version from another replica first (it holds a newer version than this
// replica's current one) is never answered with the older one: the poll waits for a compile
// that started after it. A node still ahead after that compile holds a snapshot of another
// database and gets the current one; while compiles fail, it gets nothing.
func TestWaitNeverStepsANodeBackToAnOlderVersion(t *testing.T) {
	st := newScriptStore(3)
	p, err := New(Config{Store: st, Debounce: 20 * time.Millisecond, Resync: time.Hour, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if c := p.Wait(ctx, Have{}, 10*time.Second); c == nil || c.Snapshot.Version != 3 {
		t.Fatalf("first compile: %v", c)
	}

	// Another replica compiled version 4 and the node has it; this replica has not heard.
	st.set(4)
	if c := p.Wait(ctx, Have{Version: 4}, 500*time.Millisecond); c != nil {
		t.Fatalf("node holding version 4 got version %d", c.Snapshot.Version)
	}
	if cur, _ := p.Current(); cur.Snapshot.Version != 4 {
		t.Fatalf("the poll did not make the replica catch up: current %d", cur.Snapshot.Version)
	}
	// Version 5 is in the database; a node holding it waits, a node holding 4 gets it.
	st.set(5)
	got := make(chan *Current, 2)
	go func() { got <- p.Wait(ctx, Have{Version: 4}, 10*time.Second) }()
	go func() { got <- p.Wait(ctx, Have{Version: 5}, 500*time.Millisecond) }()
	for range 2 {
		if c := <-got; c != nil && c.Snapshot.Version != 5 {
			t.Fatalf("a node got version %d", c.Snapshot.Version)
		}
	}

	// A node holding version 9 of another database gets version 5 after one compile.
	start := time.Now()
	if c := p.Wait(ctx, Have{Version: 9}, 10*time.Second); c == nil || c.Snapshot.Version != 5 {
		t.Fatalf("node with a foreign version 9: %v", c)
	} else if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("node with a foreign version answered after %v", d)
	}
	// While compiles fail, the node keeps what it has.
	st.mu.Lock()
	st.fail = errors.New("database down")
	st.mu.Unlock()
	if c := p.Wait(ctx, Have{Version: 9}, 300*time.Millisecond); c != nil {
		t.Fatalf("node with a foreign version got %d while compiles failed", c.Snapshot.Version)
	}
}

// Run compiles at start and on a change notification, and wakes balance watchers on a
// balance notification.
func TestRunFollowsNotifications(t *testing.T) {
	st := newScriptStore(1)
	p, err := New(Config{Store: st, Debounce: time.Millisecond, Resync: time.Hour, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v", err)
		}
	}()
	<-st.listened
	if c := p.Wait(ctx, Have{}, 10*time.Second); c == nil || c.Snapshot.Version != 1 {
		t.Fatalf("first compile: %v", c)
	}
	balances := p.BalanceSignal()
	st.notify <- store.ChannelBalances
	select {
	case <-balances:
	case <-time.After(10 * time.Second):
		t.Fatal("balance notification did not wake watchers")
	}
	st.set(2)
	st.notify <- store.ChannelChanged
	if c := p.Wait(ctx, Have{Version: 1}, 10*time.Second); c == nil || c.Snapshot.Version != 2 {
		t.Fatalf("after a change notification: %v", c)
	}
}
