package store_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/controlplane/store/storetest"
)

// A token's secret is stored only as its hash and finds its token and operator; its last
// use is noted at most once a minute; revoking keeps the first revocation; a live name is
// unique per operator, a revoked one free again.
func TestOperatorTokens(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
	s, _ := storetest.Open(t, store.Config{Logger: quietLogger(), MaxConns: 4, Now: clock})
	ctx := context.Background()
	if _, err := s.CreateOperator(ctx, "otto", store.RoleOperator, "$argon2id$v=19$m=1,t=1,p=1$c2FsdA$a2V5"); err != nil {
		t.Fatal(err)
	}
	exp := clock().Add(time.Hour)
	secret, tok, err := s.CreateOperatorToken(ctx, store.NewOperatorToken{Operator: "otto", Name: "ci", Role: store.RoleViewer, CreatedBy: "operator:otto", ExpiresAt: &exp})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM operator_tokens WHERE token_hash LIKE '%' || $1 || '%'`, secret[4:20]).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the secret is stored: %d %v", n, err)
	}
	lookup := func() store.OperatorToken {
		t.Helper()
		got, o, err := s.LookupOperatorToken(ctx, secret)
		if err != nil || got.ID != tok.ID || o.Name != "otto" || o.Role != store.RoleOperator {
			t.Fatalf("lookup: %+v %+v %v", got, o, err)
		}
		return got
	}
	first := lookup() // notes the use
	if first.LastUsedAt != nil {
		t.Fatalf("the answer is read before the use is noted: %v", first.LastUsedAt)
	}
	now.Add(int64(30 * time.Second))
	if u := lookup().LastUsedAt; u == nil || !u.Equal(clock().Add(-30*time.Second)) {
		t.Fatalf("last use %v", u)
	}
	now.Add(int64(45 * time.Second)) // 75 s after the first use: noted again
	lookup()
	if u := lookup().LastUsedAt; u == nil || !u.Equal(clock()) {
		t.Fatalf("last use after a minute %v", u)
	}
	if st := tok.State(clock()); st != store.TokenActive {
		t.Fatalf("state %s", st)
	}
	if st := tok.State(exp); st != store.TokenExpired {
		t.Fatalf("state at expiry %s", st)
	}
	if _, _, err := s.CreateOperatorToken(ctx, store.NewOperatorToken{Operator: "otto", Name: "ci", Role: store.RoleViewer, CreatedBy: "x"}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a second live token named ci: %v", err)
	}
	r1, err := s.RevokeOperatorToken(ctx, tok.ID, "operator:otto")
	if err != nil || r1.State(clock()) != store.TokenRevoked || r1.RevokedBy != "operator:otto" {
		t.Fatalf("revoke: %+v %v", r1, err)
	}
	now.Add(int64(time.Minute))
	r2, err := s.RevokeOperatorToken(ctx, tok.ID, "token")
	if err != nil || !r2.RevokedAt.Equal(*r1.RevokedAt) || r2.RevokedBy != "operator:otto" {
		t.Fatalf("second revoke: %+v %v", r2, err)
	}
	if _, _, err := s.CreateOperatorToken(ctx, store.NewOperatorToken{Operator: "otto", Name: "ci", Role: store.RoleViewer, CreatedBy: "x"}); err != nil {
		t.Fatalf("the name of a revoked token: %v", err)
	}
	if _, _, err := s.LookupOperatorToken(ctx, "gwo_"+secret[4:10]); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown secret: %v", err)
	}
	if _, _, err := s.CreateOperatorToken(ctx, store.NewOperatorToken{Operator: "nobody", Name: "x", Role: store.RoleViewer, CreatedBy: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("token of an unknown operator: %v", err)
	}
	l, err := s.ListOperatorTokens(ctx, "otto")
	if err != nil || len(l) != 2 {
		t.Fatalf("list: %+v %v", l, err)
	}
}
