package api_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

func TestAdminAuthAndRouting(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name, method, path, token string
		status                    int
		code                      string
	}{
		{"no token", "GET", "/admin/v1/accounts", "", 401, "invalid_admin_token"},
		{"wrong token", "GET", "/admin/v1/accounts", "nope", 401, "invalid_admin_token"},
		{"node token is not admin", "GET", "/admin/v1/accounts", nodeToken, 401, "invalid_admin_token"},
		{"admin token is not a node token", "GET", "/internal/v1/snapshot", adminToken, 401, "invalid_node_token"},
		{"admin token cannot read customer paths", "GET", "/v1/service/account", adminToken, 401, "invalid_node_token"},
		{"unknown path", "GET", "/admin/v1/nope", adminToken, 404, "endpoint_not_found"},
		{"root", "GET", "/", "", 404, "endpoint_not_found"},
		{"wrong method", "DELETE", "/admin/v1/accounts", adminToken, 405, "method_not_allowed"},
		{"ok", "GET", "/admin/v1/accounts", adminToken, 200, ""},
		{"health needs no token", "GET", "/healthz", "", 200, ""},
		{"health is read-only", "POST", "/healthz", "", 405, "method_not_allowed"},
	} {
		r := e.do(tc.method, tc.path, tc.token, nil, nil)
		if r.status != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, r.status, tc.status, r.body)
			continue
		}
		if tc.code != "" {
			if _, code, _ := r.errInfo(t); code != tc.code {
				t.Errorf("%s: code %q, want %q", tc.name, code, tc.code)
			}
		}
		if tc.status == 405 && !strings.Contains(r.header.Get("Allow"), "GET") {
			t.Errorf("%s: Allow %q", tc.name, r.header.Get("Allow"))
		}
	}
	// The node's request ID is echoed.
	r := e.do("GET", "/admin/v1/accounts", adminToken, nil, map[string]string{"X-Request-Id": "req_from_node"})
	if r.header.Get("X-Request-Id") != "req_from_node" {
		t.Fatalf("request id %q", r.header.Get("X-Request-Id"))
	}
}

func TestAdminValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := e.createAccount("Acme", "se")
	cat := func(mod func(m map[string]any, r map[string]any)) map[string]any {
		b, _ := json.Marshal(testCatalog)
		var c map[string]any
		json.Unmarshal(b, &c)
		m := c["models"].([]any)[0].(map[string]any)
		mod(m, m["routes"].([]any)[0].(map[string]any))
		return c
	}
	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		param              string
	}{
		{"malformed json", "POST", "/admin/v1/accounts", `{"customer":`, 400, "body"},
		{"unknown field", "POST", "/admin/v1/accounts", `{"customer":"a","residency":"se","x":1}`, 400, "body"},
		{"bad residency", "POST", "/admin/v1/accounts", map[string]string{"customer": "a", "residency": "us"}, 400, "residency"},
		{"upper-case residency", "POST", "/admin/v1/accounts", map[string]string{"customer": "a", "residency": "SE"}, 400, "residency"},
		{"no customer", "POST", "/admin/v1/accounts", map[string]string{"residency": "se"}, 400, "customer"},
		{"long customer", "POST", "/admin/v1/accounts", map[string]string{"customer": strings.Repeat("x", 201), "residency": "se"}, 400, "customer"},
		{"customer wrong type", "POST", "/admin/v1/accounts", `{"customer":5,"residency":"se"}`, 400, "customer"},
		{"patch bad residency", "PATCH", "/admin/v1/accounts/" + acct, map[string]string{"residency": "mars"}, 400, "residency"},
		{"patch negative limits", "PATCH", "/admin/v1/accounts/" + acct, map[string]any{"limits": map[string]int{"burst": -1}}, 400, "limits"},
		{"weight 0", "POST", "/admin/v1/accounts", map[string]any{"customer": "a", "residency": "se", "queue_weight": 0}, 400, "queue_weight"},
		{"weight 101", "POST", "/admin/v1/accounts", map[string]any{"customer": "a", "residency": "se", "queue_weight": 101}, 400, "queue_weight"},
		{"weight fraction", "POST", "/admin/v1/accounts", `{"customer":"a","residency":"se","queue_weight":2.5}`, 400, "queue_weight"},
		{"patch weight negative", "PATCH", "/admin/v1/accounts/" + acct, map[string]int{"queue_weight": -1}, 400, "queue_weight"},
		{"patch weight 101", "PATCH", "/admin/v1/accounts/" + acct, map[string]int{"queue_weight": 101}, 400, "queue_weight"},
		{"patch weight string", "PATCH", "/admin/v1/accounts/" + acct, `{"queue_weight":"3"}`, 400, "queue_weight"},
		{"patch weight null", "PATCH", "/admin/v1/accounts/" + acct, `{"queue_weight":null}`, 400, "queue_weight"},
		{"patch unknown account", "PATCH", "/admin/v1/accounts/acct_0000000000000000", map[string]bool{"suspended": true}, 404, ""},
		{"get unknown account", "GET", "/admin/v1/accounts/acct_0000000000000000", nil, 404, ""},
		{"credit number", "POST", "/admin/v1/accounts/" + acct + "/credits", `{"amount_sek":100}`, 400, "amount_sek"},
		{"credit garbage", "POST", "/admin/v1/accounts/" + acct + "/credits", map[string]string{"amount_sek": "ten"}, 400, "amount_sek"},
		{"credit negative", "POST", "/admin/v1/accounts/" + acct + "/credits", map[string]string{"amount_sek": "-5.00"}, 400, "amount_sek"},
		{"credit zero", "POST", "/admin/v1/accounts/" + acct + "/credits", map[string]string{"amount_sek": "0.00"}, 400, "amount_sek"},
		{"credit 7 decimals", "POST", "/admin/v1/accounts/" + acct + "/credits", map[string]string{"amount_sek": "1.0000001"}, 400, "amount_sek"},
		{"credit float syntax", "POST", "/admin/v1/accounts/" + acct + "/credits", map[string]string{"amount_sek": "1e3"}, 400, "amount_sek"},
		{"credit unknown account", "POST", "/admin/v1/accounts/acct_0000000000000000/credits", map[string]string{"amount_sek": "1"}, 404, ""},
		{"key expiry 29", "POST", "/admin/v1/accounts/" + acct + "/keys", map[string]int{"expires_in_days": 29}, 400, "expires_in_days"},
		{"key expiry 366", "POST", "/admin/v1/accounts/" + acct + "/keys", map[string]int{"expires_in_days": 366}, 400, "expires_in_days"},
		{"key expiry fraction", "POST", "/admin/v1/accounts/" + acct + "/keys", `{"expires_in_days":30.5}`, 400, "expires_in_days"},
		{"key expiry string", "POST", "/admin/v1/accounts/" + acct + "/keys", `{"expires_in_days":"30"}`, 400, "expires_in_days"},
		{"key unknown account", "POST", "/admin/v1/accounts/acct_0000000000000000/keys", map[string]any{}, 404, ""},
		{"revoke malformed key", "POST", "/admin/v1/keys/nope/revoke", nil, 404, ""},
		{"revoke unknown key", "POST", "/admin/v1/keys/key_000000000000/revoke", nil, 404, ""},
		{"enable nothing", "POST", "/admin/v1/accounts/" + acct + "/models", map[string]any{"models": []string{}}, 400, "models"},
		{"enable unknown model", "POST", "/admin/v1/accounts/" + acct + "/models", map[string]any{"models": []string{"nope"}}, 404, "models"},
		{"catalog bad endpoint", "PUT", "/admin/v1/catalog", cat(func(m, r map[string]any) { m["endpoint"] = "/v1/chat" }), 400, "models[0].endpoint"},
		{"catalog lower-case country", "PUT", "/admin/v1/catalog", cat(func(m, r map[string]any) { r["country"] = "se" }), 400, "models[0].routes[0].country"},
		{"catalog 3-letter country", "PUT", "/admin/v1/catalog", cat(func(m, r map[string]any) { r["country"] = "SWE" }), 400, "models[0].routes[0].country"},
		{"catalog zero weight", "PUT", "/admin/v1/catalog", cat(func(m, r map[string]any) { r["weight"] = 0 }), 400, "models[0].routes[0].weight"},
		{"catalog bad protocol", "PUT", "/admin/v1/catalog", cat(func(m, r map[string]any) { r["protocols"] = []string{"/v1/images"} }), 400, "models[0].routes[0].protocols[0]"},
		{"catalog bad base url", "PUT", "/admin/v1/catalog", cat(func(m, r map[string]any) { r["base_url"] = "ftp://x" }), 400, "models[0].routes[0].base_url"},
		// What nodes refuse, the control plane refuses (shared/snapshot.Route.Validate).
		{"catalog base url userinfo", "PUT", "/admin/v1/catalog", cat(func(m, r map[string]any) { r["base_url"] = "http://u:p@h/v1" }), 400, "models[0].routes[0].base_url"},
		{"catalog base url query", "PUT", "/admin/v1/catalog", cat(func(m, r map[string]any) { r["base_url"] = "http://h/v1?k=1" }), 400, "models[0].routes[0].base_url"},
		{"catalog base url fragment", "PUT", "/admin/v1/catalog", cat(func(m, r map[string]any) { r["base_url"] = "http://h/v1#x" }), 400, "models[0].routes[0].base_url"},
		{"catalog credentials node token", "PUT", "/admin/v1/catalog", cat(func(m, r map[string]any) { r["credentials_ref"] = "env:GATEWAY_NODE_TOKEN" }), 400, "models[0].routes[0].credentials_ref"},
		{"catalog credentials any env", "PUT", "/admin/v1/catalog", cat(func(m, r map[string]any) { r["credentials_ref"] = "env:HOME" }), 400, "models[0].routes[0].credentials_ref"},
		{"catalog alias equals id", "PUT", "/admin/v1/catalog", cat(func(m, r map[string]any) { m["aliases"] = []string{"nomic-embed"} }), 400, "models[1].id"},
		{"catalog duplicate alias", "PUT", "/admin/v1/catalog", cat(func(m, r map[string]any) { m["aliases"] = []string{"a", "a"} }), 400, "models[0].aliases[1]"},
		{"catalog negative price", "PUT", "/admin/v1/catalog", cat(func(m, r map[string]any) { m["input_ore_per_million_tokens"] = -1 }), 400, "models[0].input_ore_per_million_tokens"},
		{"catalog unknown field", "PUT", "/admin/v1/catalog", cat(func(m, r map[string]any) { m["price"] = 1 }), 400, "models[0]"},
	} {
		r := e.admin(tc.method, tc.path, tc.body)
		if r.status != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, r.status, tc.status, r.body)
			continue
		}
		if _, _, param := r.errInfo(t); tc.param != "" && param != tc.param {
			t.Errorf("%s: param %q, want %q (%s)", tc.name, param, tc.param, r.body)
		}
	}
	// Nothing of the failed calls reached the store.
	var models struct{ Data []any }
	e.mustStatus(e.admin("GET", "/admin/v1/models", nil), 200).json(t, &models)
	if len(models.Data) != 0 {
		t.Fatalf("an invalid catalogue was stored: %d models", len(models.Data))
	}
	var a struct {
		BalanceMicroSEK int64 `json:"balance_micro_sek"`
	}
	e.mustStatus(e.admin("GET", "/admin/v1/accounts/"+acct, nil), 200).json(t, &a)
	if a.BalanceMicroSEK != 0 {
		t.Fatalf("a refused credit changed the balance: %d", a.BalanceMicroSEK)
	}
}

func TestAdminFlow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var counts adminapi.CatalogResult
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200).json(t, &counts)
	if counts.Models != 2 || counts.Routes != 2 {
		t.Fatalf("catalog counts %v", counts)
	}
	// Idempotent upload.
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200)

	var a adminapi.Account
	e.mustStatus(e.admin("POST", "/admin/v1/accounts", map[string]string{"customer": "Acme AB", "residency": "eu"}), 201).json(t, &a)
	if !strings.HasPrefix(a.ID, "acct_") || len(a.ID) != 21 || a.BalanceSEK != "0.00" || a.Models == nil || a.CreatedAt.IsZero() {
		t.Fatalf("created account %+v", a)
	}

	var credit adminapi.Credit
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+a.ID+"/credits", map[string]string{"amount_sek": "100.25", "note": "trial"}), 200).json(t, &credit)
	if credit.EntryID == 0 || credit.Applied == nil || !*credit.Applied || credit.BalanceMicroSEK != 100_250_000 || credit.BalanceSEK != "100.25" {
		t.Fatalf("credit %+v", credit)
	}
	// A credit with a reference applies once.
	for i := 0; i < 2; i++ {
		e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+a.ID+"/credits", map[string]string{"amount_sek": "1", "reference": "inv-1"}), 200).json(t, &credit)
	}
	if credit.BalanceMicroSEK != 101_250_000 {
		t.Fatalf("referenced credit applied twice: %d", credit.BalanceMicroSEK)
	}

	var k1, k2 adminapi.Key
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+a.ID+"/keys", map[string]any{"name": "ci", "expires_in_days": 30}), 201).json(t, &k1)
	if !strings.HasPrefix(k1.Secret, "sgw_") || k1.AccountID != a.ID || k1.ExpiresAt == nil ||
		k1.ExpiresAt.Sub(k1.CreatedAt) < 29*24*time.Hour || k1.ExpiresAt.Sub(k1.CreatedAt) > 31*24*time.Hour {
		t.Fatalf("key %+v", k1)
	}
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+a.ID+"/keys", map[string]any{"expires_in_days": 365}), 201)
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+a.ID+"/keys", map[string]any{}), 201).json(t, &k2)
	if k2.ExpiresAt != nil {
		t.Fatalf("key without expiry got %v", k2.ExpiresAt)
	}
	r := e.mustStatus(e.admin("GET", "/admin/v1/accounts/"+a.ID+"/keys", nil), 200)
	if strings.Contains(string(r.body), "secret") || strings.Contains(string(r.body), k1.Secret) {
		t.Fatal("key list shows a secret")
	}
	var keys struct{ Data []adminapi.Key }
	r.json(t, &keys)
	if len(keys.Data) != 3 {
		t.Fatalf("%d keys", len(keys.Data))
	}
	var revoked adminapi.Key
	e.mustStatus(e.admin("POST", "/admin/v1/keys/"+k2.ID+"/revoke", nil), 200).json(t, &revoked)
	if revoked.RevokedAt == nil {
		t.Fatal("revoke did not set revoked_at")
	}

	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+a.ID+"/models", map[string]any{"models": []string{"meta/llama", "nomic-embed"}}), 200).json(t, &a)
	if !slices.Equal(a.Models, []string{"llama-3.1-8b", "nomic-embed"}) {
		t.Fatalf("models %v", a.Models)
	}
	e.mustStatus(e.admin("DELETE", "/admin/v1/accounts/"+a.ID+"/models/nomic-embed", nil), 200).json(t, &a)
	if !slices.Equal(a.Models, []string{"llama-3.1-8b"}) {
		t.Fatalf("models after delete %v", a.Models)
	}
	e.mustStatus(e.admin("DELETE", "/admin/v1/accounts/"+a.ID+"/models/meta%2Fllama", nil), 200).json(t, &a)
	if len(a.Models) != 0 {
		t.Fatalf("alias with a slash not removed: %v", a.Models)
	}
	e.mustStatus(e.admin("DELETE", "/admin/v1/accounts/"+a.ID+"/models/nomic-embed", nil), 404)

	e.mustStatus(e.admin("PATCH", "/admin/v1/accounts/"+a.ID, map[string]any{"suspended": true, "limits": map[string]any{"requests_per_second": 2.5, "burst": 5}}), 200).json(t, &a)
	if !a.Suspended || a.Residency != "eu" || a.Limits == nil || a.Limits.Burst != 5 {
		t.Fatalf("patched %+v", a)
	}
	id := a.ID
	a = adminapi.Account{}
	e.mustStatus(e.admin("PATCH", "/admin/v1/accounts/"+id, map[string]any{"limits": nil, "residency": "any"}), 200).json(t, &a)
	if a.Limits != nil || a.Residency != "any" || !a.Suspended {
		t.Fatalf("patched again %+v", a)
	}
	var accts struct{ Data []adminapi.Account }
	e.mustStatus(e.admin("GET", "/admin/v1/accounts", nil), 200).json(t, &accts)
	if len(accts.Data) != 1 || accts.Data[0].BalanceMicroSEK != 101_250_000 {
		t.Fatalf("list %+v", accts)
	}

	var models adminapi.List[adminapi.Model]
	e.mustStatus(e.admin("GET", "/admin/v1/models", nil), 200).json(t, &models)
	if len(models.Data) != 2 || models.Data[0].ID != "llama-3.1-8b" || !slices.Equal(models.Data[0].Aliases, []string{"llama", "meta/llama"}) ||
		models.Data[0].InputOrePerMillion != 150 || len(models.Data[0].Routes) != 1 || models.Data[0].Routes[0].Model != "llama-3.1-8b" || models.Data[1].Aliases == nil {
		t.Fatalf("models %s", e.admin("GET", "/admin/v1/models", nil).body)
	}
	var routes struct{ Data []map[string]any }
	e.mustStatus(e.admin("GET", "/admin/v1/routes", nil), 200).json(t, &routes)
	if len(routes.Data) != 2 || routes.Data[0]["id"] != "embed-de" || routes.Data[1]["translate"] != true {
		t.Fatalf("routes %+v", routes)
	}

	var info adminapi.SnapshotInfo
	e.mustStatus(e.admin("GET", "/admin/v1/snapshot", nil), 200).json(t, &info)
	if info.Version < 1 || len(info.Hash) != 64 || info.GeneratedAt.IsZero() {
		t.Fatalf("snapshot info %+v", info)
	}
}

// A key's own limits are set and cleared through PATCH /admin/v1/keys/{id} and reach the
// snapshot; bad limits and unknown keys are refused.
func TestAdminKeyLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := e.createAccount("Limits AB", "se")
	var k adminapi.Key
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+acct+"/keys", map[string]any{}), 201).json(t, &k)
	e.mustStatus(e.admin("PATCH", "/admin/v1/keys/"+k.ID, map[string]any{"limits": map[string]any{"requests_per_second": 2.5, "burst": 4}}), 200).json(t, &k)
	if k.Limits == nil || k.Limits.RequestsPerSecond != 2.5 || k.Limits.Burst != 4 {
		t.Fatalf("patched key %+v", k.Limits)
	}
	snapKeyLimits := func() *snapshot.Limits {
		s, err := e.store.CompileSnapshot(context.Background(), snapshot.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		for _, sk := range s.Keys {
			if sk.ID == k.ID {
				return sk.Limits
			}
		}
		t.Fatalf("key %s not in snapshot", k.ID)
		return nil
	}
	if l := snapKeyLimits(); l == nil || l.RequestsPerSecond != 2.5 || l.Burst != 4 {
		t.Fatalf("snapshot key limits %+v", l)
	}
	e.mustStatus(e.admin("PATCH", "/admin/v1/keys/"+k.ID, map[string]any{"limits": nil}), 200)
	if l := snapKeyLimits(); l != nil {
		t.Fatalf("cleared limits still in snapshot: %+v", l)
	}
	for name, body := range map[string]any{
		"negative":      map[string]any{"limits": map[string]any{"burst": -1}},
		"unknown field": map[string]any{"limits": map[string]any{"rps": 1}},
		"missing":       map[string]any{},
	} {
		r := e.mustStatus(e.admin("PATCH", "/admin/v1/keys/"+k.ID, body), 400)
		if _, _, param := r.errInfo(t); param != "limits" {
			t.Errorf("%s: param %q", name, param)
		}
	}
	e.mustStatus(e.admin("PATCH", "/admin/v1/keys/key_000000000000", map[string]any{"limits": nil}), 404)
	e.mustStatus(e.admin("PATCH", "/admin/v1/keys/nope", map[string]any{"limits": nil}), 404)
}
