package api_test

import (
	"strings"
	"testing"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/api"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Accounts and keys carry their effective limits and where they come from: the key's own,
// else the account's, else the deployment's defaults. Every change is in the audit log.
func TestAdminEffectiveLimits(t *testing.T) {
	t.Parallel()
	def := snapshot.Limits{RequestsPerSecond: 100, Burst: 200}
	e := newEnvWith(t, func(c *api.Config) { c.DefaultLimits = def })
	acct := e.createAccount("Effective AB", "se")
	var k adminapi.Key
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+acct+"/keys", map[string]any{}), 201).json(t, &k)

	check := func(step string, wantAcct, wantKey adminapi.EffectiveLimits) {
		t.Helper()
		var a adminapi.Account
		e.mustStatus(e.admin("GET", "/admin/v1/accounts/"+acct, nil), 200).json(t, &a)
		if a.EffectiveLimits == nil || *a.EffectiveLimits != wantAcct {
			t.Errorf("%s: account effective limits %+v, want %+v", step, a.EffectiveLimits, wantAcct)
		}
		var keys adminapi.List[adminapi.Key]
		e.mustStatus(e.admin("GET", "/admin/v1/accounts/"+acct+"/keys", nil), 200).json(t, &keys)
		if len(keys.Data) != 1 || keys.Data[0].EffectiveLimits == nil || *keys.Data[0].EffectiveLimits != wantKey {
			t.Errorf("%s: keys %+v, want effective %+v", step, keys.Data, wantKey)
		}
	}
	dflt := adminapi.EffectiveLimits{Limits: def, Source: snapshot.SourceDefault}
	check("nothing set", dflt, dflt)

	acctL := snapshot.Limits{RequestsPerSecond: 5, MaxConcurrent: 2}
	e.mustStatus(e.admin("PATCH", "/admin/v1/accounts/"+acct, map[string]any{"limits": acctL}), 200)
	viaAcct := adminapi.EffectiveLimits{Limits: acctL, Source: snapshot.SourceAccount}
	check("account limits", viaAcct, viaAcct)

	keyL := snapshot.Limits{RequestsPerSecond: 1, Burst: 3}
	var patched adminapi.Key
	e.mustStatus(e.admin("PATCH", "/admin/v1/keys/"+k.ID, map[string]any{"limits": keyL}), 200).json(t, &patched)
	own := adminapi.EffectiveLimits{Limits: keyL, Source: snapshot.SourceKey}
	if patched.EffectiveLimits == nil || *patched.EffectiveLimits != own {
		t.Fatalf("PATCH answer effective limits %+v", patched.EffectiveLimits)
	}
	check("key limits", viaAcct, own)

	e.mustStatus(e.admin("PATCH", "/admin/v1/accounts/"+acct, map[string]any{"limits": nil}), 200)
	e.mustStatus(e.admin("PATCH", "/admin/v1/keys/"+k.ID, map[string]any{"limits": nil}), 200)
	check("both cleared", dflt, dflt)

	var page adminapi.AuditPage
	e.mustStatus(e.admin("GET", "/admin/v1/audit?target="+k.ID, nil), 200).json(t, &page)
	var keyEdits int
	for _, en := range page.Data {
		if en.Action == "PATCH /admin/v1/keys/{id}" && en.Status == 200 {
			keyEdits++
		}
	}
	if keyEdits != 2 {
		t.Fatalf("audit log has %d key limit edits, want 2: %+v", keyEdits, page.Data)
	}
}

// A suspension keeps the operator's reason until it is lifted; a reason without a
// suspension, or too long, is refused.
func TestAdminSuspensionReason(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := e.createAccount("Reason AB", "se")
	var a adminapi.Account
	e.mustStatus(e.admin("PATCH", "/admin/v1/accounts/"+acct,
		map[string]any{"suspended": true, "suspension_reason": "  unpaid invoice 2026-10 "}), 200).json(t, &a)
	if !a.Suspended || a.SuspensionReason != "unpaid invoice 2026-10" {
		t.Fatalf("suspended %+v", a)
	}
	a = adminapi.Account{}
	e.mustStatus(e.admin("PATCH", "/admin/v1/accounts/"+acct, map[string]any{"residency": "eu"}), 200).json(t, &a)
	if a.SuspensionReason != "unpaid invoice 2026-10" {
		t.Fatalf("another change lost the reason: %+v", a)
	}
	for name, body := range map[string]any{
		"without suspending": map[string]any{"suspension_reason": "x"},
		"while lifting":      map[string]any{"suspended": false, "suspension_reason": "x"},
		"too long":           map[string]any{"suspended": true, "suspension_reason": strings.Repeat("x", 1001)},
	} {
		r := e.mustStatus(e.admin("PATCH", "/admin/v1/accounts/"+acct, body), 400)
		if _, _, param := r.errInfo(t); param != "suspension_reason" {
			t.Errorf("%s: param %q", name, param)
		}
	}
	a = adminapi.Account{}
	e.mustStatus(e.admin("PATCH", "/admin/v1/accounts/"+acct, map[string]any{"suspended": false}), 200).json(t, &a)
	if a.Suspended || a.SuspensionReason != "" {
		t.Fatalf("lifted %+v", a)
	}
}
