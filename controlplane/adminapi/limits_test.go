package adminapi

import (
	"testing"
	"time"

	"github.com/sekgate/gateway/shared/snapshot"
)

func TestEffectiveLimitsString(t *testing.T) {
	t.Parallel()
	def := snapshot.Limits{RequestsPerSecond: 50}
	for _, tc := range []struct {
		name      string
		key, acct *snapshot.Limits
		want      string
	}{
		{"key", &snapshot.Limits{RequestsPerSecond: 2.5, Burst: 5}, nil, "2.5 rps, burst 5 (key)"},
		{"account", nil, &snapshot.Limits{MaxConcurrent: 4, HoldMaxPrice: true}, "4 in flight, holds max price (account)"},
		{"default", nil, nil, "50 rps (default)"},
		{"empty own limits", nil, &snapshot.Limits{}, "unlimited (account)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewEffectiveLimits(tc.key, tc.acct, def).String(); got != tc.want {
				t.Fatalf("String() = %q, want %q", got, tc.want)
			}
		})
	}
	var none *EffectiveLimits
	if none.String() != "—" {
		t.Fatalf("nil String() = %q", none.String())
	}
}

func TestKeyStatus(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	past, future := now.Add(-time.Minute), now.Add(time.Minute)
	for _, tc := range []struct {
		name string
		k    Key
		want string
	}{
		{"no expiry", Key{}, KeyActive},
		{"expires later", Key{ExpiresAt: &future}, KeyActive},
		{"expired", Key{ExpiresAt: &past}, KeyExpired},
		{"expires now", Key{ExpiresAt: &now}, KeyExpired},
		{"revoked wins", Key{ExpiresAt: &past, RevokedAt: &past}, KeyRevoked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.k.Status(now); got != tc.want {
				t.Fatalf("Status = %q, want %q", got, tc.want)
			}
		})
	}
}
