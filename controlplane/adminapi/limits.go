package adminapi

import (
	"strconv"
	"strings"
	"time"

	"github.com/sekgate/gateway/shared/snapshot"
)

// EffectiveLimits are the limits that apply to an account or a key and where they come
// from (Source): "key" (the key's own), "account" (the account's own) or "default" (the
// deployment's defaults). The control plane computes them with snapshot.EffectiveLimits,
// the rule the nodes enforce.
type EffectiveLimits struct {
	snapshot.Limits
	Source string `json:"source"`
}

// NewEffectiveLimits returns the effective limits of a key with limits key (nil for an
// account, or a key without limits of its own) of an account with limits account.
func NewEffectiveLimits(key, account *snapshot.Limits, defaults snapshot.Limits) *EffectiveLimits {
	l, src := snapshot.EffectiveLimits(key, account, defaults)
	return &EffectiveLimits{Limits: l, Source: src}
}

// String writes the limits and their source as the console and gatewayctl show them:
// "10 rps, burst 20, 4 in flight (account)".
func (e *EffectiveLimits) String() string {
	if e == nil {
		return "—"
	}
	return LimitsText(e.Limits) + " (" + e.Source + ")"
}

// LimitsText writes limits for people: "10 rps, burst 20, 4 in flight", "unlimited" when no
// field limits anything. A zero field is not limited (a zero burst is one second's worth).
func LimitsText(l snapshot.Limits) string {
	var parts []string
	if l.RequestsPerSecond > 0 {
		parts = append(parts, strconv.FormatFloat(l.RequestsPerSecond, 'f', -1, 64)+" rps")
	}
	if l.Burst > 0 {
		parts = append(parts, "burst "+strconv.Itoa(l.Burst))
	}
	if l.MaxConcurrent > 0 {
		parts = append(parts, strconv.Itoa(l.MaxConcurrent)+" in flight")
	}
	if l.HoldMaxPrice {
		parts = append(parts, "holds max price")
	}
	if len(parts) == 0 {
		return "unlimited"
	}
	return strings.Join(parts, ", ")
}

// Key states, as Key.Status gives them.
const (
	KeyActive  = "active"
	KeyExpired = "expired"
	KeyRevoked = "revoked"
)

// Status is the key's state at now: revoked, expired (its expiry has passed) or active.
// The console and gatewayctl both show it, so they never disagree.
func (k Key) Status(now time.Time) string {
	switch {
	case k.RevokedAt != nil:
		return KeyRevoked
	case k.ExpiresAt != nil && !k.ExpiresAt.After(now):
		return KeyExpired
	}
	return KeyActive
}
