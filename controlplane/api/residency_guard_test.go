package api_test

import (
	"strings"
	"testing"
)

// Enabling a model that no route in the account's residency serves is refused with the
// reason (the customer would get 404 as for a typo), unless asked for explicitly.
func TestEnableModelOutsideResidencyRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200)
	se, eu := e.createAccount("Sverige AB", "se"), e.createAccount("Europa GmbH", "eu")
	r := e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+se+"/models", map[string]any{"models": []string{"llama", "nomic-embed"}}), 409)
	if !strings.Contains(string(r.body), "residency policy (se) admits no route of nomic-embed (its routes are in DE)") {
		t.Fatalf("refusal: %s", r.body)
	}
	if _, code, param := r.errInfo(t); code != "conflict" || param != "models" {
		t.Fatalf("refusal: %s %s", code, param)
	}
	var a struct{ Models []string }
	e.mustStatus(e.admin("GET", "/admin/v1/accounts/"+se, nil), 200).json(t, &a)
	if len(a.Models) != 0 {
		t.Fatalf("a refused call enabled %v", a.Models)
	}
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+eu+"/models", map[string]any{"models": []string{"nomic-embed"}}), 200)
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+se+"/models", map[string]any{"models": []string{"llama"}}), 200)
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+se+"/models", map[string]any{"models": []string{"nomic-embed"}, "allow_outside_residency": true}), 200)
}
