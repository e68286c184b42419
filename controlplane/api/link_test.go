package api_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/api"
	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/controlplane/publish"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

// The admin API lives only on the admin listener: on the node listener every admin path
// is an unknown path (404), with the admin token too; node paths are absent from the admin
// listener.
func TestAdminOnlyOnAdminListener(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/admin/v1/accounts"}, {"POST", "/admin/v1/accounts"}, {"GET", "/admin/v1/snapshot"}, {"PUT", "/admin/v1/catalog"},
	} {
		r := e.doAt(e.srv.URL, tc.method, tc.path, adminToken, strings.NewReader("{}"), nil)
		if r.status != 404 {
			t.Errorf("%s %s on the node listener: %d, want 404", tc.method, tc.path, r.status)
		}
		if _, code, _ := r.errInfo(t); code != "endpoint_not_found" {
			t.Errorf("%s %s: code %q", tc.method, tc.path, code)
		}
	}
	if r := e.doAt(e.adm.URL, "GET", "/admin/v1/accounts", adminToken, nil, nil); r.status != 200 {
		t.Fatalf("admin listener: %d", r.status)
	}
	if r := e.doAt(e.adm.URL, "GET", internalapi.PathSnapshot, nodeToken, nil, map[string]string{internalapi.HeaderNodeID: "n"}); r.status != 404 {
		t.Fatalf("node path on the admin listener: %d", r.status)
	}
	// A wrong token of any length, including a prefix of the right one, is refused.
	for _, tok := range []string{adminToken[:len(adminToken)-1], adminToken + "x", "x", strings.Repeat("a", 4096)} {
		if r := e.doAt(e.adm.URL, "GET", "/admin/v1/accounts", tok, nil, nil); r.status != 401 {
			t.Fatalf("token %q...: %d", tok[:1], r.status)
		}
	}
}

func TestTokensTooShortRefused(t *testing.T) {
	st, err := store.Open(context.Background(), store.Config{DatabaseURL: pgtest.NewDatabase(t), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pub, _ := publish.New(publish.Config{Store: st, Logger: quiet()})
	long := strings.Repeat("k", internalapi.MinTokenBytes)
	for _, tc := range []struct {
		name         string
		admin        string
		nodes        []string
		wantAccepted bool
	}{
		{"long enough", long, []string{long + "n"}, true},
		{"short admin", long[:31], []string{long}, false},
		{"short node", long, []string{long, "node-short"}, false},
		{"admin with space", long[:20] + " " + long[:20], []string{long}, false},
	} {
		_, err := api.New(api.Config{Store: st, Snapshots: pub, AdminToken: tc.admin, NodeTokens: tc.nodes, Logger: quiet()})
		if (err == nil) != tc.wantAccepted {
			t.Errorf("%s: err %v", tc.name, err)
		}
	}
}

// Snapshots are signed; a node holding another content at the current version, or an
// older issue, receives the current snapshot; a node holding the current one waits.
func TestSnapshotSignedAndComparedByHash(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	status, s1, _ := e.poll(0, 0)
	if status != 200 {
		t.Fatalf("first poll: %d", status)
	}
	if err := s1.VerifySigned(signingKey.Public().(ed25519.PublicKey)); err != nil {
		t.Fatalf("snapshot not signed by the control plane's key: %v", err)
	}
	if s1.IssuedAt.IsZero() || time.Since(s1.IssuedAt) > time.Minute {
		t.Fatalf("issued_at %v", s1.IssuedAt)
	}
	sh, _ := snapshot.StructureHash(&s1.Content)
	get := func(q string) int {
		return e.node("GET", internalapi.PathSnapshot+q, "").status
	}
	current := fmt.Sprintf("?have=%d&hash=%s&issued=%d&wait=0", s1.Version, sh, s1.IssuedAt.UnixNano())
	if st := get(current); st != 304 {
		t.Fatalf("current holder: %d, want 304", st)
	}
	other := strings.Repeat("ab", 32)
	if st := get(fmt.Sprintf("?have=%d&hash=%s&issued=%d&wait=0", s1.Version, other, s1.IssuedAt.UnixNano())); st != 200 {
		t.Fatalf("other content at the current version: %d, want 200", st)
	}
	if st := get(fmt.Sprintf("?have=%d&hash=%s&issued=%d&wait=0", s1.Version, sh, s1.IssuedAt.UnixNano()-1)); st != 200 {
		t.Fatalf("older issue: %d, want 200", st)
	}
	for _, q := range []string{"?have=1&hash=XYZ", "?have=1&hash=" + strings.ToUpper(sh), "?have=1&issued=-1", "?have=1&issued=soon"} {
		if st := get(q); st != 400 {
			t.Errorf("%s: %d, want 400", q, st)
		}
	}
}

// A route row written before the shared validator existed (here: straight into the
// database) is left out of the snapshot instead of freezing every node.
func TestInvalidRouteRowLeftOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.admin("PUT", "/admin/v1/catalog", map[string]any{"models": []any{map[string]any{
		"id": "m1", "endpoint": "/v1/chat/completions", "routes": []any{
			map[string]any{"id": "good", "provider": "p", "base_url": "http://127.0.0.1:9/v1", "region": "se", "country": "SE", "weight": 1},
			map[string]any{"id": "bad", "provider": "p", "base_url": "http://127.0.0.1:9/v1", "region": "se", "country": "SE", "weight": 1},
		}}}})
	if _, err := e.store.Pool().Exec(context.Background(), `UPDATE routes SET base_url = 'http://u:p@h/v1' WHERE id = 'bad'`); err != nil {
		t.Fatal(err)
	}
	e.pub.Kick()
	var s *snapshot.Snapshot
	if !poll.Wait(10*time.Second, func() bool {
		_, s, _ = e.poll(0, 0)
		return s != nil && len(s.Routes) == 1 && s.Routes[0].ID == "good"
	}) {
		t.Fatalf("bad route still published: %+v", s)
	}
}

// The publisher re-issues the current snapshot (same version, fresh issue time, new
// signature) once Reissue has passed, and a node holding the older issue receives it.
func TestSnapshotReissue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	now := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	p, err := publish.New(publish.Config{Store: e.store, Logger: quiet(), Signer: signingKey, Reissue: time.Hour, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	first, _ := p.Current()
	if !first.Snapshot.IssuedAt.Equal(now) {
		t.Fatalf("issued_at %v, want %v", first.Snapshot.IssuedAt, now)
	}
	advance(10 * time.Minute)
	_ = p.Refresh(ctx)
	if cur, _ := p.Current(); cur != first {
		t.Fatal("re-issued before the interval")
	}
	advance(time.Hour)
	_ = p.Refresh(ctx)
	second, _ := p.Current()
	if second == first || second.Snapshot.Version != first.Snapshot.Version || !second.Snapshot.IssuedAt.After(first.Snapshot.IssuedAt) {
		t.Fatalf("not re-issued: %+v", second.Snapshot.IssuedAt)
	}
	if err := second.Snapshot.VerifySigned(signingKey.Public().(ed25519.PublicKey)); err != nil {
		t.Fatal(err)
	}
	have := publish.Have{Version: first.Snapshot.Version, StructHash: first.StructHash, IssuedAt: first.Snapshot.IssuedAt.UnixNano()}
	if got := p.Wait(ctx, have, 0); got != second {
		t.Fatal("a node holding the older issue does not get the new one")
	}
	have.IssuedAt = second.Snapshot.IssuedAt.UnixNano()
	if got := p.Wait(ctx, have, 10*time.Millisecond); got != nil {
		t.Fatal("a node holding the current issue got it again")
	}
}
