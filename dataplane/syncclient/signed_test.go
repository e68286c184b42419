package syncclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/internal/syncbuf"
	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/snapshot"
)

func loggedClient(t *testing.T, url, dir string, st *index.Store, now func() time.Time) (*Client, *syncbuf.Buffer) {
	t.Helper()
	lb := &syncbuf.Buffer{}
	c, err := New(Config{Link: testLink(t, url, 10*time.Millisecond, 50*time.Millisecond), DataDir: dir, Store: st,
		Wait:      time.Second,
		PublicKey: fixture.PublicKey, Now: now, Logger: slog.New(slog.NewTextHandler(lb, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return c, lb
}

// forge adds a key to s and recomputes the hash, as an attacker without the signing key can.
func forge(s *snapshot.Snapshot) string {
	id, secret, hash, _ := apikey.New()
	s.Keys = append(s.Keys, snapshot.Key{ID: id, AccountID: fixture.AcctSE, Hash: hash})
	s.Hash, _ = snapshot.ComputeHash(&s.Content)
	return secret
}

func TestTamperedSnapshotOnWireRefused(t *testing.T) {
	good, _ := fixture.Snapshot(1, "http://up/v1", time.Now())
	bad, _ := fixture.Snapshot(2, "http://up/v1", time.Now())
	forge(bad)
	cp := newFakeCP(good)
	srv := httptest.NewServer(cp)
	defer srv.Close()
	var st index.Store
	c, logs := loggedClient(t, srv.URL, t.TempDir(), &st, nil)
	if err := c.Poll(context.Background()); err != nil || st.Load().Version() != 1 {
		t.Fatalf("genuine snapshot: %v", err)
	}
	cp.set(bad)
	if err := c.Poll(context.Background()); !errors.Is(err, snapshot.ErrSignature) {
		t.Fatalf("forged snapshot: err %v", err)
	}
	if st.Load().Version() != 1 {
		t.Fatal("forged snapshot replaced the genuine one")
	}
	if !strings.Contains(logs.String(), "refusing snapshot from the control plane") {
		t.Fatalf("no log line: %s", logs)
	}
	// A genuine but old snapshot (a replay): refused by its signed issue time.
	old, _ := fixture.Snapshot(4, "http://up/v1", time.Now().Add(-25*time.Hour))
	cp.set(old)
	if err := c.Poll(context.Background()); !errors.Is(err, ErrTooOld) || st.Load().Version() != 1 {
		t.Fatalf("replayed old snapshot: err %v, version %d", err, st.Load().Version())
	}
	if !strings.Contains(logs.String(), "issued longer ago than --snapshot-max-age") {
		t.Fatalf("no log line for the replay: %s", logs)
	}
	// Unsigned: refused too.
	unsigned, _ := fixture.Snapshot(3, "http://up/v1", time.Now())
	unsigned.Signature = ""
	cp.set(unsigned)
	if err := c.Poll(context.Background()); !errors.Is(err, snapshot.ErrSignature) {
		t.Fatalf("unsigned snapshot: err %v", err)
	}
	// Truncated on the wire: a decode error, nothing applied.
	trunc := httptest.NewServer(httpFunc(func(b []byte) []byte { return b[:len(b)/2] }, good))
	defer trunc.Close()
	var st2 index.Store
	c2, _ := loggedClient(t, trunc.URL, "", &st2, nil)
	if err := c2.Poll(context.Background()); err == nil || st2.Ready() {
		t.Fatalf("truncated snapshot: err %v ready %v", err, st2.Ready())
	}
}

func TestTamperedDiskSnapshotRefused(t *testing.T) {
	dir := t.TempDir()
	s, _ := fixture.Snapshot(5, "http://up/v1", time.Now())
	var st index.Store
	c, _ := loggedClient(t, "http://127.0.0.1:1", dir, &st, nil)
	if err := c.Apply(s); err != nil {
		t.Fatal(err)
	}
	genuine, err := os.ReadFile(c.Path())
	if err != nil {
		t.Fatal(err)
	}
	var onDisk snapshot.Snapshot
	if err := json.Unmarshal(genuine, &onDisk); err != nil {
		t.Fatal(err)
	}
	forge(&onDisk)
	forged, _ := json.Marshal(&onDisk)
	tests := []struct {
		name, log string
		body      []byte
	}{
		{"added key with recomputed hash", "does not verify", forged},
		{"truncated", "truncated or malformed", genuine[:len(genuine)-40]},
		{"unsigned", "does not verify", bytes.Replace(genuine, []byte(`"signature":"`), []byte(`"signature":"x`), 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(c.Path(), tt.body, 0o600); err != nil {
				t.Fatal(err)
			}
			var fresh index.Store
			r, logs := loggedClient(t, "http://127.0.0.1:1", dir, &fresh, nil)
			if ok, err := r.LoadDisk(); ok || err == nil {
				t.Fatalf("LoadDisk = %v, %v", ok, err)
			}
			if fresh.Ready() {
				t.Fatal("node is ready from a refused file")
			}
			if !strings.Contains(logs.String(), "refusing last-known-good snapshot") || !strings.Contains(logs.String(), tt.log) {
				t.Fatalf("log: %s", logs)
			}
		})
	}
}

// A node holding a stale (another content at the current version) or forged file is
// corrected on its next sync, although the version matches.
func TestStaleOrForgedFileAtCurrentVersionCorrected(t *testing.T) {
	issued := time.Now().Add(-time.Minute)
	current, ks := fixture.Snapshot(9, "http://up/v1", issued)
	stale, ksStale := fixture.Snapshot(9, "http://up/v1", issued) // same version, other keys
	cp := newFakeCP(current)
	srv := httptest.NewServer(cp)
	defer srv.Close()
	for _, tt := range []struct {
		name   string
		file   func() []byte
		wrongK string
	}{
		{"stale genuine file", func() []byte { b, _ := json.Marshal(stale); return b }, ksStale.SE},
		{"forged file", func() []byte {
			f, _ := fixture.Snapshot(9, "http://up/v1", issued)
			*f = *current
			f.Keys = append([]snapshot.Key(nil), current.Keys...)
			forge(f)
			b, _ := json.Marshal(f)
			return b
		}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(dir+"/"+FileName, tt.file(), 0o600); err != nil {
				t.Fatal(err)
			}
			var st index.Store
			c, _ := loggedClient(t, srv.URL, dir, &st, nil)
			_, _ = c.LoadDisk()
			if err := c.Poll(context.Background()); err != nil {
				t.Fatal(err)
			}
			x := st.Load()
			if x == nil || x.Version() != 9 || x.Snapshot.Hash != current.Hash {
				t.Fatalf("not corrected: %+v", x)
			}
			if _, ok := x.Key(ks.IDs["se"]); !ok {
				t.Fatal("current key missing")
			}
			if tt.wrongK != "" {
				if _, ok := x.Key(ksStale.IDs["se"]); ok {
					t.Fatal("stale key still served")
				}
			}
			// Now current: the next poll is a 304 (no re-download).
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if err := c.Poll(ctx); err != nil || st.Load() != x {
				t.Fatalf("second poll: %v, swapped %v", err, st.Load() != x)
			}
		})
	}
}

func TestDiskSnapshotMaxAge(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	s, _ := fixture.Snapshot(3, "http://up/v1", now.Add(-25*time.Hour))
	var st index.Store
	w, _ := loggedClient(t, "http://127.0.0.1:1", dir, &st, nil)
	if err := w.save(s); err != nil {
		t.Fatal(err)
	}
	var fresh index.Store
	c, logs := loggedClient(t, "http://127.0.0.1:1", dir, &fresh, func() time.Time { return now })
	if ok, err := c.LoadDisk(); ok || !errors.Is(err, ErrTooOld) || fresh.Ready() {
		t.Fatalf("25h old snapshot: %v %v ready %v", ok, err, fresh.Ready())
	}
	if !strings.Contains(logs.String(), "older than --snapshot-max-age") {
		t.Fatalf("log: %s", logs)
	}
	// 23h old: served; once the clock passes 24h with the control plane still down, the
	// node goes not-ready.
	s2, _ := fixture.Snapshot(4, "http://up/v1", now.Add(-23*time.Hour))
	if err := w.save(s2); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	clock := now
	var st3 index.Store
	c3, logs3 := loggedClient(t, "http://127.0.0.1:1", dir, &st3, func() time.Time { mu.Lock(); defer mu.Unlock(); return clock })
	if ok, err := c3.LoadDisk(); !ok || err != nil || !st3.Ready() {
		t.Fatalf("23h old snapshot: %v %v", ok, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c3.Run(ctx) }()
	waitFor(t, "three failed polls", func() bool { return strings.Contains(logs3.String(), "failures=3") })
	// A few failed polls: still serving.
	if !st3.Ready() {
		t.Fatal("went not-ready before max age")
	}
	mu.Lock()
	clock = now.Add(2 * time.Hour)
	mu.Unlock()
	waitFor(t, "not ready after max age", func() bool { return !st3.Ready() })
	cancel()
	<-done
	if !strings.Contains(logs3.String(), "passed --snapshot-max-age") {
		t.Fatalf("log: %s", logs3)
	}
}

func httpFunc(edit func([]byte) []byte, s *snapshot.Snapshot) *fakeBody {
	b, _ := json.Marshal(s)
	return &fakeBody{b: edit(b)}
}

func FuzzDecodeSignedSnapshot(f *testing.F) {
	s, _ := fixture.Snapshot(1, "http://up/v1", time.Now())
	b, _ := json.Marshal(s)
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Add([]byte(`{"version":1,"hash":"","signature":""}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var st index.Store
		c, err := New(Config{Link: testLink(t, "http://127.0.0.1:1", 0, 0), Store: &st, PublicKey: fixture.PublicKey})
		if err != nil {
			t.Fatal(err)
		}
		d, err := decode(bytes.NewReader(in))
		if err != nil {
			return
		}
		if err := c.install(d, false); err == nil {
			// Whatever installs carries the key's signature over its own content's hash.
			h, _ := snapshot.ComputeHash(&d.Content)
			if h != d.Hash || d.VerifySignature(fixture.PublicKey) != nil || !st.Ready() {
				t.Fatalf("installed a snapshot that does not verify: %s", in)
			}
		} else if st.Ready() {
			t.Fatal("refused snapshot was installed")
		}
	})
}

// fakeBody answers every request 200 with fixed bytes.
type fakeBody struct{ b []byte }

func (f *fakeBody) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(f.b)
}
