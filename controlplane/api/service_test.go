package api_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/usage"
)

type recordOut struct {
	RequestID        string         `json:"request_id"`
	TS               time.Time      `json:"ts"`
	KeyID            *string        `json:"key_id"`
	Model            string         `json:"model"`
	Provider         *string        `json:"provider"`
	Residency        *string        `json:"residency"`
	Status           int            `json:"status"`
	Result           string         `json:"result"`
	PromptTokens     int64          `json:"prompt_tokens"`
	CompletionTokens int64          `json:"completion_tokens"`
	PriceMicroSEK    int64          `json:"price_micro_sek"`
	PriceSEK         string         `json:"price_sek"`
	Routing          *usage.Routing `json:"routing"`
}

type pageOut struct {
	Data      []recordOut `json:"data"`
	HasMore   bool        `json:"has_more"`
	NextAfter *string     `json:"next_after"`
}

// seedRecords gives two accounts records: a has 30 (every third with key ka, one
// console record without key), b has 5 with key kb.
func seedRecords(t *testing.T, e *env) (a, b, ka, kb string) {
	a, b = e.createAccount("Acme", "se"), e.createAccount("Beta", "eu")
	var k struct{ ID string }
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+a+"/keys", map[string]any{}), 201).json(t, &k)
	ka = k.ID
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+b+"/keys", map[string]any{}), 201).json(t, &k)
	kb = k.ID
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200) // prices the records are checked against
	now := time.Now().UTC().Truncate(time.Millisecond)
	var recs []usage.Record
	for i := 0; i < 30; i++ {
		r := usage.Record{RequestID: fmt.Sprintf("req_a%02d", i), TS: now.Add(-time.Duration(i) * time.Minute), AccountID: a,
			Model: "llama-3.1-8b", Endpoint: "/v1/chat/completions", Provider: "vllm", Residency: "se-sto-1", Status: 200, Result: usage.ResultOK,
			PromptTokens: 100, CompletionTokens: 50, PriceMicroSEK: 300,
			Routing: &usage.Routing{Policy: "se", Attempts: []usage.Attempt{{Route: "llama-se", Provider: "vllm", Region: "se-sto-1", Status: 200}}}}
		if i%3 == 0 {
			r.KeyID = &ka
		}
		if i == 29 {
			r.Model, r.Provider, r.Residency, r.Status, r.Result, r.PriceMicroSEK, r.Routing = "nomic-embed", "", "", 503, usage.ResultNoRoute, 0, nil
			r.PromptTokens, r.CompletionTokens = 0, 0
		}
		recs = append(recs, r)
	}
	for i := 0; i < 5; i++ {
		recs = append(recs, usage.Record{RequestID: fmt.Sprintf("req_b%02d", i), TS: now, AccountID: b, KeyID: &kb,
			Model: "llama-3.1-8b", Status: 200, Result: usage.ResultOK, PromptTokens: 7, PriceMicroSEK: 11})
	}
	// An old record outside the 30-day window.
	recs = append(recs, usage.Record{RequestID: "req_old", TS: now.AddDate(0, 0, -40), AccountID: a, Model: "llama-3.1-8b",
		Status: 200, Result: usage.ResultOK, PromptTokens: 1_000_000, PriceMicroSEK: 1_500_000})
	if rep, st := e.postUsage(usage.Batch{NodeID: "n", BatchID: "seed", Records: recs}); st != 200 || rep.Rejected != 0 {
		t.Fatalf("seed: %d %+v", st, rep)
	}
	return a, b, ka, kb
}

func TestServiceAccount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b, _, _ := seedRecords(t, e)
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+a+"/credits", map[string]string{"amount_sek": "1"}), 200)
	var out struct {
		Customer        string `json:"customer"`
		Residency       string `json:"residency"`
		BalanceMicroSEK int64  `json:"balance_micro_sek"`
		BalanceSEK      string `json:"balance_sek"`
		Usage           []struct {
			Model            string `json:"model"`
			Requests         int64  `json:"requests"`
			PromptTokens     int64  `json:"prompt_tokens"`
			CompletionTokens int64  `json:"completion_tokens"`
			PriceMicroSEK    int64  `json:"price_micro_sek"`
			PriceSEK         string `json:"price_sek"`
		} `json:"usage_30d"`
	}
	e.mustStatus(e.node("GET", "/v1/service/account", a), 200).json(t, &out)
	// 1 SEK credit - 29*300 µSEK - 1.5 SEK (the old record is charged, just outside usage_30d).
	want := int64(1_000_000 - 29*300 - 1_500_000)
	if out.Customer != "Acme" || out.Residency != "se" || out.BalanceMicroSEK != want || out.BalanceSEK != "-0.5087" {
		t.Fatalf("account %+v (want balance %d)", out, want)
	}
	if len(out.Usage) != 2 || out.Usage[0].Model != "llama-3.1-8b" || out.Usage[0].Requests != 29 || out.Usage[0].PromptTokens != 2900 ||
		out.Usage[0].CompletionTokens != 1450 || out.Usage[0].PriceMicroSEK != 8700 || out.Usage[0].PriceSEK != "0.0087" ||
		out.Usage[1].Model != "nomic-embed" || out.Usage[1].Requests != 1 {
		t.Fatalf("usage_30d %+v", out.Usage)
	}
	// b sees only its own.
	e.mustStatus(e.node("GET", "/v1/service/account", b), 200).json(t, &out)
	if out.Customer != "Beta" || len(out.Usage) != 1 || out.Usage[0].Requests != 5 {
		t.Fatalf("b %+v", out)
	}
	// An account with no usage gets an empty list, not null.
	c := e.createAccount("Gamma", "any")
	r := e.mustStatus(e.node("GET", "/v1/service/account", c), 200)
	if !contains(r.body, `"usage_30d":[]`) || !contains(r.body, `"balance_sek":"0.00"`) {
		t.Fatalf("empty account %s", r.body)
	}
	if contains(r.body, `"suspended"`) {
		t.Fatalf("an active account reads as suspended: %s", r.body)
	}
	// A suspended account reads its balance and why it is suspended.
	yes := true
	if _, err := e.store.UpdateAccount(context.Background(), c, store.AccountPatch{Suspended: &yes}); err != nil {
		t.Fatal(err)
	}
	r = e.mustStatus(e.node("GET", "/v1/service/account", c), 200)
	if !contains(r.body, `"suspended":true`) || !contains(r.body, `"suspended_reason":"suspended by the operator`) ||
		!contains(r.body, `"balance_sek":"0.00"`) {
		t.Fatalf("suspended account %s", r.body)
	}
	// HEAD has headers only.
	if r := e.node("HEAD", "/v1/service/account", a); r.status != 200 || len(r.body) != 0 {
		t.Fatalf("HEAD %d %q", r.status, r.body)
	}
	// Without a node token the identity headers are not trusted.
	if r := e.do("GET", "/v1/service/account", "", nil, map[string]string{"X-Gateway-Account-Id": a}); r.status != 401 {
		t.Fatalf("no node token: %d", r.status)
	}
	if r := e.do("GET", "/v1/service/account", "forged", nil, map[string]string{"X-Gateway-Account-Id": a}); r.status != 401 {
		t.Fatalf("forged node token: %d", r.status)
	}
	if r := e.node("GET", "/v1/service/account", ""); r.status != 401 {
		t.Fatalf("no account header: %d", r.status)
	}
	if r := e.node("GET", "/v1/service/account", "acct_0000000000000000"); r.status != 401 {
		t.Fatalf("unknown account: %d", r.status)
	}
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }

func TestServiceRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b, ka, kb := seedRecords(t, e)
	list := func(account, query string) (int, pageOut, resp) {
		r := e.node("GET", "/v1/service/requests"+query, account)
		var p pageOut
		if r.status == 200 {
			r.json(t, &p)
		}
		return r.status, p, r
	}
	for _, tc := range []struct {
		name, account, query string
		status, n            int
		param                string
	}{
		{"default limit", a, "", 200, 20, ""},
		{"limit 5", a, "?limit=5", 200, 5, ""},
		{"limit 1", a, "?limit=1", 200, 1, ""},
		{"limit 100", a, "?limit=100", 200, 31, ""},
		{"limit 0 falls back", a, "?limit=0", 200, 20, ""},
		{"limit 101 falls back", a, "?limit=101", 200, 20, ""},
		{"limit -1 falls back", a, "?limit=-1", 200, 20, ""},
		{"limit text falls back", a, "?limit=ten", 200, 20, ""},
		{"limit empty falls back", a, "?limit=", 200, 20, ""},
		{"limit fraction falls back", a, "?limit=2.5", 200, 20, ""},
		{"own key", a, "?limit=100&key_id=" + ka, 200, 10, ""},
		{"other account's key", a, "?limit=100&key_id=" + kb, 200, 0, ""},
		{"unknown key", a, "?key_id=key_000000000000", 200, 0, ""},
		{"b sees only its own", b, "?limit=100", 200, 5, ""},
		{"b with a's key", b, "?key_id=" + ka, 200, 0, ""},
		{"key upper-case", a, "?key_id=key_ABCDEF012345", 400, 0, "key_id"},
		{"key too short", a, "?key_id=key_123", 400, 0, "key_id"},
		{"key empty", a, "?key_id=", 400, 0, "key_id"},
		{"key other prefix", a, "?key_id=sk_0123456789ab", 400, 0, "key_id"},
		{"bad cursor", a, "?after=!!!", 400, 0, "after"},
		{"bad cursor content", a, "?after=" + url.QueryEscape("bm90LWEtY3Vyc29y"), 400, 0, "after"},
	} {
		st, p, r := list(tc.account, tc.query)
		if st != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, st, tc.status, r.body)
			continue
		}
		if st != 200 {
			if _, _, param := r.errInfo(t); param != tc.param {
				t.Errorf("%s: param %q, want %q", tc.name, param, tc.param)
			}
			continue
		}
		if len(p.Data) != tc.n {
			t.Errorf("%s: %d records, want %d", tc.name, len(p.Data), tc.n)
		}
		if p.Data == nil {
			t.Errorf("%s: data is null", tc.name)
		}
		for i, rec := range p.Data {
			if i > 0 && rec.TS.After(p.Data[i-1].TS) {
				t.Errorf("%s: not newest first", tc.name)
			}
			if tc.account == a && rec.RequestID[:5] != "req_a" && rec.RequestID != "req_old" {
				t.Errorf("%s: foreign record %s", tc.name, rec.RequestID)
			}
		}
	}
	// Keyset pages cover everything exactly once, newest first.
	var ids []string
	q := "?limit=7"
	for pages := 0; pages < 10; pages++ {
		_, p, _ := list(a, q)
		for _, r := range p.Data {
			ids = append(ids, r.RequestID)
		}
		if !p.HasMore {
			break
		}
		q = "?limit=7&after=" + url.QueryEscape(*p.NextAfter)
	}
	if len(ids) != 31 || ids[0] != "req_a00" || ids[29] != "req_a29" || ids[30] != "req_old" {
		t.Fatalf("paged %d: %v", len(ids), ids)
	}
	// The record's fields.
	_, p, _ := list(a, "?limit=1")
	r := p.Data[0]
	if r.RequestID != "req_a00" || r.KeyID == nil || *r.KeyID != ka || r.Model != "llama-3.1-8b" || r.Provider == nil || *r.Provider != "vllm" ||
		r.Residency == nil || *r.Residency != "se-sto-1" || r.Status != 200 || r.Result != "ok" || r.PromptTokens != 100 ||
		r.CompletionTokens != 50 || r.PriceMicroSEK != 300 || r.PriceSEK != "0.0003" || r.Routing == nil || r.Routing.Attempts[0].Route != "llama-se" {
		t.Fatalf("record %+v", r)
	}
}

func TestServiceRequestByID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b, _, _ := seedRecords(t, e)
	var r recordOut
	e.mustStatus(e.node("GET", "/v1/service/requests/req_a29", a), 200).json(t, &r)
	if r.KeyID != nil || r.Provider != nil || r.Residency != nil || r.Routing != nil || r.Status != 503 || r.Result != "no_route" || r.PriceSEK != "0.00" {
		t.Fatalf("console record %+v", r)
	}
	raw := e.mustStatus(e.node("GET", "/v1/service/requests/req_a29", a), 200).body
	for _, f := range []string{`"key_id":null`, `"provider":null`, `"routing":null`} {
		if !contains(raw, f) {
			t.Errorf("record lacks %s: %s", f, raw)
		}
	}
	for _, tc := range []struct{ name, account, id string }{
		{"another account's record", b, "req_a00"},
		{"the other way round", a, "req_b00"},
		{"unknown", a, "req_nope"},
		// Malformed IDs are 404 too, never Postgres' message with 400.
		{"invalid UTF-8", a, "req_%FF%FE"},
		{"lone surrogate bytes", a, "%ED%A0%80"},
		{"NUL", a, "req_%00a29"},
		{"over 200 bytes", a, strings.Repeat("r", 201)},
		{"encoded slash", a, "req_a29%2F..%2Freq_b00"},
	} {
		res := e.node("GET", "/v1/service/requests/"+tc.id, tc.account)
		if res.status != 404 {
			t.Errorf("%s: %d", tc.name, res.status)
			continue
		}
		if typ, code, _ := res.errInfo(t); code != "request_not_found" || typ != "not_found_error" {
			t.Errorf("%s: %s %s", tc.name, typ, code)
		}
	}
}
