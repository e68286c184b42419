package api_test

import (
	"strings"
	"testing"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// Alert rules are created (the signing secret shown once, never in the audit log),
// listed, turned off and deleted through the admin API; bad rules are refused naming
// the field.
func TestAdminAlertRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := e.createAccount("Alerted AB", "se")
	var rule adminapi.AlertRule
	e.mustStatus(e.admin("POST", "/admin/v1/alert-rules", adminapi.CreateAlertRuleRequest{Name: "low balance", Kind: "balance_below",
		AccountID: acct, Threshold: 50_000_000, WebhookURL: "https://hooks.example.com/gateway"}), 201).json(t, &rule)
	if !strings.HasPrefix(rule.ID, "alr_") || !strings.HasPrefix(rule.Secret, "whsec_") || !rule.Enabled || rule.AccountID != acct {
		t.Fatalf("created %+v", rule)
	}
	var list adminapi.List[adminapi.AlertRule]
	e.mustStatus(e.admin("GET", "/admin/v1/alert-rules", nil), 200).json(t, &list)
	if len(list.Data) != 1 || list.Data[0].Secret != "" || list.Data[0].Threshold != 50_000_000 {
		t.Fatalf("list %+v", list.Data)
	}
	en := e.lastAudit(t, rule.ID)
	if en.Action != "POST /admin/v1/alert-rules" || strings.Contains(string(en.After), rule.Secret) {
		t.Fatalf("audit entry %+v after %s", en, en.After)
	}
	e.mustStatus(e.admin("PATCH", "/admin/v1/alert-rules/"+rule.ID, map[string]any{"enabled": false}), 200).json(t, &rule)
	if rule.Enabled {
		t.Fatal("still enabled")
	}
	if en := e.lastAudit(t, rule.ID); field(t, en.Before, "enabled") != "true" || field(t, en.After, "enabled") != "false" {
		t.Fatalf("audit of the change: before %s after %s", en.Before, en.After)
	}
	var ds adminapi.List[adminapi.AlertDelivery]
	e.mustStatus(e.admin("GET", "/admin/v1/alert-deliveries?limit=10", nil), 200).json(t, &ds)
	if len(ds.Data) != 0 {
		t.Fatalf("deliveries %+v", ds.Data)
	}
	e.mustStatus(e.admin("DELETE", "/admin/v1/alert-rules/"+rule.ID, nil), 200)
	e.mustStatus(e.admin("DELETE", "/admin/v1/alert-rules/"+rule.ID, nil), 404)

	tests := []struct {
		name  string
		body  map[string]any
		param string
	}{
		{"no name", map[string]any{"kind": "node_silent", "threshold": 60000, "webhook_url": "https://h.example"}, "name"},
		{"unknown kind", map[string]any{"name": "x", "kind": "cpu_hot", "webhook_url": "https://h.example"}, "kind"},
		{"ftp webhook", map[string]any{"name": "x", "kind": "route_problem", "webhook_url": "ftp://h.example"}, "webhook_url"},
		{"budget over 1000%", map[string]any{"name": "x", "kind": "budget_used_above", "threshold": 5000, "webhook_url": "https://h.example"}, "threshold"},
		{"silent under a second", map[string]any{"name": "x", "kind": "node_silent", "threshold": 10, "webhook_url": "https://h.example"}, "threshold"},
		{"account on a node rule", map[string]any{"name": "x", "kind": "spool_age_above", "threshold": 60000, "account_id": acct, "webhook_url": "https://h.example"}, "account_id"},
		{"threshold on route rule", map[string]any{"name": "x", "kind": "route_problem", "threshold": 3, "webhook_url": "https://h.example"}, "threshold"},
	}
	for _, tc := range tests {
		r := e.admin("POST", "/admin/v1/alert-rules", tc.body)
		if r.status != 400 {
			t.Errorf("%s: status %d: %s", tc.name, r.status, r.body)
			continue
		}
		if _, _, param := r.errInfo(t); param != tc.param {
			t.Errorf("%s: param %q, want %q", tc.name, param, tc.param)
		}
	}
	r := e.admin("POST", "/admin/v1/alert-rules", map[string]any{"name": "x", "kind": "balance_below", "account_id": "acct_0000000000000000", "webhook_url": "https://h.example"})
	if r.status != 404 {
		t.Errorf("unknown account: %d %s", r.status, r.body)
	}
}
