package syncclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/cplink"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

// fakeCP is a fake control plane serving the snapshot long poll.
type fakeCP struct {
	mu      sync.Mutex
	snap    *snapshot.Snapshot
	changed chan struct{}
	haves   []int64
	bad     atomic.Int32 // requests with wrong auth
}

func newFakeCP(s *snapshot.Snapshot) *fakeCP { return &fakeCP{snap: s, changed: make(chan struct{})} }

func (f *fakeCP) set(s *snapshot.Snapshot) {
	f.mu.Lock()
	f.snap = s
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

func (f *fakeCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != internalapi.PathSnapshot || r.Header.Get("Authorization") != "Bearer node-secret" || r.Header.Get(internalapi.HeaderNodeID) != "node-1" {
		f.bad.Add(1)
		http.Error(w, `{"error":{"type":"authentication_error","message":"no"}}`, http.StatusUnauthorized)
		return
	}
	q := r.URL.Query()
	have, _ := strconv.ParseInt(q.Get("have"), 10, 64)
	issued, _ := strconv.ParseInt(q.Get("issued"), 10, 64)
	wait, _ := strconv.Atoi(q.Get("wait"))
	f.mu.Lock()
	f.haves = append(f.haves, have)
	s, ch := f.snap, f.changed
	f.mu.Unlock()
	// The control plane's rule (publish.Have.Outdated): version, structure, issue time.
	sh, _ := snapshot.StructureHash(&s.Content)
	if s.Version == have && (q.Get("hash") == "" || q.Get("hash") == sh) && s.IssuedAt.UnixNano() <= issued {
		select {
		case <-ch:
			f.mu.Lock()
			s = f.snap
			f.mu.Unlock()
		case <-time.After(time.Duration(wait) * time.Second):
			w.WriteHeader(http.StatusNotModified)
			return
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s)
}

func newClient(t *testing.T, url, dir string, st *index.Store, seen *atomic.Int64) *Client {
	t.Helper()
	c, err := New(Config{
		Link: testLink(t, url, 10*time.Millisecond, 50*time.Millisecond), DataDir: dir, Store: st,
		Wait:      time.Second,
		PublicKey: fixture.PublicKey,
		OnSnapshot: func(s *snapshot.Snapshot) {
			if seen != nil {
				seen.Store(s.Version)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 10*time.Second, what, cond)
}

func TestSyncSwapsOnNewVersionAndWritesDisk(t *testing.T) {
	now := time.Now()
	s1, _ := fixture.Snapshot(1, "http://up/v1", now)
	cp := newFakeCP(s1)
	srv := httptest.NewServer(cp)
	defer srv.Close()
	dir := t.TempDir()
	var st index.Store
	var seen atomic.Int64
	c := newClient(t, srv.URL, dir, &st, &seen)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	waitFor(t, "version 1", func() bool { x := st.Load(); return x != nil && x.Version() == 1 })
	first := st.Load()
	s2, ks2 := fixture.Snapshot(2, "http://up/v1", now)
	cp.set(s2)
	waitFor(t, "version 2", func() bool { return st.Load().Version() == 2 })
	if st.Load() == first {
		t.Fatal("index not swapped")
	}
	if _, ok := st.Load().Key(ks2.IDs["se"]); !ok {
		t.Fatal("new key not visible after swap")
	}
	waitFor(t, "OnSnapshot(2)", func() bool { return seen.Load() == 2 })
	waitFor(t, "disk version 2", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, FileName))
		if err != nil {
			return false
		}
		var d snapshot.Snapshot
		return json.Unmarshal(b, &d) == nil && d.Version == 2 && d.VerifySigned(fixture.PublicKey) == nil
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
	if cp.bad.Load() != 0 {
		t.Fatal("node sent bad auth")
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.haves[0] != 0 || !contains(cp.haves, 1) {
		t.Errorf("have parameters %v", cp.haves)
	}
	// No temp files left behind.
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("data dir holds %d entries", len(ents))
	}
}

func contains(xs []int64, v int64) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}

func TestRejectsHashMismatchKeepsCurrent(t *testing.T) {
	s1, _ := fixture.Snapshot(1, "http://up/v1", time.Now())
	var st index.Store
	c := newClient(t, "http://127.0.0.1:1", t.TempDir(), &st, nil)
	if err := c.Apply(s1); err != nil {
		t.Fatal(err)
	}
	s2, _ := fixture.Snapshot(2, "http://up/v1", time.Now())
	s2.Accounts[0].Suspended = true // content changed after hashing
	if err := c.Apply(s2); !errors.Is(err, snapshot.ErrHashMismatch) {
		t.Fatalf("err = %v", err)
	}
	if st.Load().Version() != 1 {
		t.Fatal("bad snapshot replaced the good one")
	}
}

func TestServesFromDiskWhenControlPlaneDown(t *testing.T) {
	dir := t.TempDir()
	s1, ks := fixture.Snapshot(5, "http://up/v1", time.Now())
	var st1 index.Store
	if err := newClient(t, "http://127.0.0.1:1", dir, &st1, nil).Apply(s1); err != nil {
		t.Fatal(err)
	}

	// A "restarted" node: fresh store, control plane unreachable.
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	var st index.Store
	var seen atomic.Int64
	c := newClient(t, downURL, dir, &st, &seen)
	ok, err := c.LoadDisk()
	if err != nil || !ok {
		t.Fatalf("LoadDisk = %v, %v", ok, err)
	}
	if st.Load().Version() != 5 || seen.Load() != 5 {
		t.Fatalf("version %d seen %d", st.Load().Version(), seen.Load())
	}
	if _, ok := st.Load().Key(ks.IDs["se"]); !ok {
		t.Fatal("key missing after disk load")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if err := c.Run(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run = %v", err)
	}
	if st.Load().Version() != 5 {
		t.Fatal("lost the disk snapshot while the control plane was down")
	}
}

func TestNoDiskSnapshotNotReady(t *testing.T) {
	var st index.Store
	c := newClient(t, "http://127.0.0.1:1", t.TempDir(), &st, nil)
	ok, err := c.LoadDisk()
	if ok || err != nil || st.Ready() {
		t.Fatalf("LoadDisk = %v, %v, ready %v", ok, err, st.Ready())
	}
	// A corrupt file is an error and leaves the node not ready.
	if err := os.WriteFile(c.Path(), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LoadDisk(); err == nil || st.Ready() {
		t.Fatalf("corrupt file: err %v ready %v", err, st.Ready())
	}
}

func TestBackoffRespectsContext(t *testing.T) {
	var st index.Store
	c, err := New(Config{Link: testLink(t, "http://127.0.0.1:1", time.Hour, time.Hour), Store: &st, AllowUnsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := c.Run(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run = %v", err)
	}
	// The backoff is an hour: any return within 30 s means the context cut it short.
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("Run slept through cancellation: %v", d)
	}
}

func TestUnexpectedStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	var st index.Store
	c := newClient(t, srv.URL, "", &st, nil)
	if err := c.Poll(context.Background()); !errors.Is(err, ErrStatus) {
		t.Fatalf("Poll = %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	var st index.Store
	link := testLink(t, "http://x", 0, 0)
	for _, cfg := range []Config{
		{Link: link, Store: &st}, // no public key
		{Link: link, Store: &st, PublicKey: []byte("short")},
		{Store: &st, AllowUnsigned: true},
		{Link: link, AllowUnsigned: true},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// testLink is node-1's link to the control plane at url with the given retry waits.
func testLink(t testing.TB, url string, waitMin, waitMax time.Duration) *cplink.Client {
	t.Helper()
	l, err := cplink.New(cplink.Config{URL: url, NodeID: "node-1", NodeToken: "node-secret", RetryWaitMin: waitMin, RetryWaitMax: waitMax})
	if err != nil {
		t.Fatal(err)
	}
	return l
}
