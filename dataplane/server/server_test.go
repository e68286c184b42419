package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/dataplane/memmeter"
	"github.com/sekgate/gateway/dataplane/modellist"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

const chatBody = `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}]}`

func TestHealthzAndRequestID(t *testing.T) {
	g := startGateway(t)
	r := g.do(t, "GET", "/healthz", "", "")
	if r.Status != 200 || r.Body != "ok" || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("healthz: %+v", r)
	}
	id := r.Header.Get("X-Request-Id")
	if len(id) != requestIDLen || !strings.HasPrefix(id, "req_") {
		t.Fatalf("request id %q", id)
	}
	if r2 := g.do(t, "GET", "/healthz", "", ""); r2.Header.Get("X-Request-Id") == id {
		t.Fatal("request ids repeat")
	}
}

func TestNotReady(t *testing.T) {
	store := &index.Store{}
	s, err := New(Config{Store: store, Meter: memmeter.New(0)})
	if err != nil {
		t.Fatal(err)
	}
	g := &gateway{}
	_ = g
	gw := startGateway(t, func(c *Config) { c.Store = store })
	_ = s
	for _, path := range []string{"/v1/models", "/v1/models/x"} {
		r := gw.do(t, "GET", path, gw.Keys.SE, "")
		checkEnvelope(t, r, 503, "not_ready")
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", path)
		}
	}
	checkEnvelope(t, gw.do(t, "POST", "/v1/chat/completions", gw.Keys.SE, chatBody), 503, "not_ready")
	if r := gw.do(t, "GET", "/healthz", "", ""); r.Status != 200 {
		t.Fatalf("healthz while not ready: %d", r.Status)
	}
}

func TestAuth(t *testing.T) {
	g := startGateway(t)
	foreign := "sk-proj-" + strings.Repeat("a", 48)
	cases := []struct {
		name   string
		path   string
		hdr    []string
		status int
		code   string
	}{
		{"missing", "/v1/models", nil, 401, "invalid_api_key"},
		{"unknown", "/v1/models", []string{"Authorization", "Bearer sgw_0123456789ab_" + strings.Repeat("0", 40)}, 401, "invalid_api_key"},
		{"revoked", "/v1/models", []string{"Authorization", "Bearer " + g.Keys.Revoked}, 401, "api_key_revoked"},
		{"revoked id, other secret", "/v1/models", []string{"Authorization", "Bearer " + otherLastHex(g.Keys.Revoked)}, 401, "invalid_api_key"},
		{"expired", "/v1/models", []string{"Authorization", "Bearer " + g.Keys.Expired}, 401, "api_key_expired"},
		{"foreign vendor", "/v1/models", []string{"Authorization", "Bearer " + foreign}, 401, "invalid_api_key"},
		{"wrong secret for real id", "/v1/models", []string{"Authorization", "Bearer " + otherLastHex(g.Keys.SE)}, 401, "invalid_api_key"},
		{"not bearer", "/v1/models", []string{"Authorization", "Basic " + g.Keys.SE}, 401, "invalid_api_key"},
		{"lowercase bearer ok", "/v1/models", []string{"Authorization", "bearer " + g.Keys.SE}, 200, ""},
		{"valid", "/v1/models", []string{"Authorization", "Bearer " + g.Keys.SE}, 200, ""},
		{"x-api-key not on openai paths", "/v1/models", []string{"x-api-key", g.Keys.SE}, 401, "invalid_api_key"},
		{"suspended", "/v1/models", []string{"Authorization", "Bearer " + g.Keys.Suspended}, 403, "account_suspended"},
		{"x-api-key on messages count", "/v1/messages/count_tokens", []string{"x-api-key", g.Keys.SE}, 400, "unsupported_protocol"},
		{"authorization wins over x-api-key", "/v1/messages/count_tokens", []string{"x-api-key", g.Keys.SE, "Authorization", "Bearer nope"}, 401, "invalid_api_key"},
		{"messages without key", "/v1/messages/count_tokens", nil, 401, "invalid_api_key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			method, body := "GET", ""
			if strings.HasPrefix(c.path, "/v1/messages") {
				method, body = "POST", `{"model":"llama8b","messages":[{"role":"user","content":"x"}]}`
			}
			r := g.do(t, method, c.path, "", body, c.hdr...)
			if c.status == 200 {
				if r.Status != 200 {
					t.Fatalf("status %d: %s", r.Status, r.Body)
				}
				return
			}
			checkEnvelope(t, r, c.status, c.code)
			if strings.HasPrefix(c.path, "/v1/messages") && gjson.Get(r.Body, "type").Str != "error" {
				t.Errorf("messages-style envelope lacks type=error: %s", r.Body)
			}
		})
	}
}

// A revoked or expired key is told so, with when.
func TestRevokedAndExpiredWording(t *testing.T) {
	g := startGateway(t)
	for _, tc := range []struct{ name, key, code, want string }{
		{"revoked", g.Keys.Revoked, "api_key_revoked", "this API key was revoked at " + fixture.RevokedAt(g.Snap.GeneratedAt).Format(time.RFC3339)},
		{"expired", g.Keys.Expired, "api_key_expired", "this API key expired at " + g.Snap.GeneratedAt.Add(-time.Hour).UTC().Format(time.RFC3339)},
	} {
		for _, path := range []string{"/v1/models", "/v1/service/account"} {
			r := g.do(t, "GET", path, tc.key, "")
			checkEnvelope(t, r, 401, tc.code)
			if msg := gjson.Get(r.Body, "error.message").Str; !strings.HasPrefix(msg, tc.want) {
				t.Errorf("%s %s: %q, want %q", tc.name, path, msg, tc.want)
			}
		}
	}
}

func TestResidencyUnsatisfiable(t *testing.T) {
	g := startGateway(t)
	s, ks := fixture.Snapshot(2, "http://127.0.0.1:1/v1", g.Snap.GeneratedAt)
	var routes []snapshot.Route
	for _, r := range s.Routes {
		if r.Country != "SE" {
			routes = append(routes, r)
		}
	}
	s.Routes = routes
	x, err := index.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	g.Store.Swap(x)
	checkEnvelope(t, g.do(t, "GET", "/v1/models", ks.SE, ""), 403, "residency_unsatisfiable")
	checkEnvelope(t, g.do(t, "POST", "/v1/chat/completions", ks.SE, chatBody), 403, "residency_unsatisfiable")
	if r := g.do(t, "GET", "/v1/models", ks.EU, ""); r.Status != 200 {
		t.Fatalf("eu account: %d", r.Status)
	}
}

func TestModels(t *testing.T) {
	g := startGateway(t)
	r := g.do(t, "GET", "/v1/models", g.Keys.SE, "")
	if r.Status != 200 || r.Header.Get("X-Service-Policy") != "se" {
		t.Fatalf("list: %d %v", r.Status, r.Header)
	}
	var list modellist.ListJSON
	if err := json.Unmarshal([]byte(r.Body), &list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, []string{fixture.ModelChat, fixture.ModelEmbed}) || list.Object != "list" || list.Service != nil {
		t.Fatalf("se list %v %s", ids, r.Body)
	}
	chat := list.Data[0]
	if chat.Object != "model" || chat.OwnedBy != "service" || chat.Pricing.Currency != "SEK" ||
		chat.Pricing.InputOre != fixture.PriceIn || chat.ContextTokens != 8192 || chat.Endpoint != "/v1/chat/completions" ||
		!slices.Equal(chat.Endpoints, []string{"/v1/chat/completions", "/v1/completions", "/v1/messages", "/v1/responses"}) {
		t.Errorf("chat model %+v", chat)
	}
	if strings.Contains(r.Body, `"context_tokens":0`) {
		t.Errorf("context_tokens 0 rendered: %s", r.Body)
	}
	if r := g.do(t, "GET", "/v1/models/"+fixture.ModelEUOnly, g.Keys.EU, ""); !strings.Contains(r.Body, `"aliases":[]`) {
		t.Errorf("no aliases must render as []: %s", r.Body)
	}

	// Empty list.
	r = g.do(t, "GET", "/v1/models", g.Keys.Empty, "")
	if r.Status != 200 || gjson.Get(r.Body, "service.code").Str != "no_models_available" ||
		!gjson.Get(r.Body, "data").IsArray() || len(gjson.Get(r.Body, "data").Array()) != 0 || gjson.Get(r.Body, "service.message").Str == "" {
		t.Fatalf("empty list: %s", r.Body)
	}

	get := []struct {
		name, path, key string
		status          int
	}{
		{"canonical", "/v1/models/" + fixture.ModelChat, g.Keys.SE, 200},
		{"alias", "/v1/models/llama8b", g.Keys.SE, 200},
		{"alias with %2F", "/v1/models/" + url.PathEscape(fixture.AliasChatSlash), g.Keys.SE, 200},
		{"alias with %2f lowercase", "/v1/models/" + strings.Replace(url.PathEscape(fixture.AliasChatSlash), "%2F", "%2f", 1), g.Keys.SE, 200},
		{"alias with literal slash", "/v1/models/" + fixture.AliasChatSlash, g.Keys.SE, 200},
		{"hidden by residency", "/v1/models/" + fixture.ModelEUOnly, g.Keys.SE, 404},
		{"visible in eu", "/v1/models/" + fixture.ModelEUOnly, g.Keys.EU, 200},
		{"not enabled", "/v1/models/" + fixture.ModelChat, g.Keys.Empty, 404},
		{"unknown", "/v1/models/gpt-4o", g.Keys.SE, 404},
		{"empty", "/v1/models/", g.Keys.SE, 404}, // endpoint_not_found or model_not_found
	}
	for _, c := range get {
		t.Run(c.name, func(t *testing.T) {
			r := g.do(t, "GET", c.path, c.key, "")
			if c.status != 200 {
				code := "model_not_found"
				if c.name == "empty" {
					code = ""
				}
				checkEnvelope(t, r, c.status, code)
				return
			}
			if r.Status != 200 || gjson.Get(r.Body, "object").Str != "model" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			want := fixture.ModelChat
			if strings.Contains(c.path, fixture.ModelEUOnly) {
				want = fixture.ModelEUOnly
			}
			if gjson.Get(r.Body, "id").Str != want {
				t.Fatalf("id %s", gjson.Get(r.Body, "id").Str)
			}
		})
	}
	// HEAD: headers only.
	if r := g.do(t, "HEAD", "/v1/models", g.Keys.SE, ""); r.Status != 200 || r.Body != "" {
		t.Fatalf("HEAD: %d %q", r.Status, r.Body)
	}
	// DELETE on a model: 405 with Allow.
	r = g.do(t, "DELETE", "/v1/models/llama8b", g.Keys.SE, "")
	checkEnvelope(t, r, 405, "method_not_allowed")
	if !strings.Contains(r.Header.Get("Allow"), "GET") {
		t.Errorf("Allow %q", r.Header.Get("Allow"))
	}
}

func TestChatNonStreaming(t *testing.T) {
	g := startGateway(t)
	r := g.do(t, "POST", "/v1/chat/completions", g.Keys.SE, chatBody)
	if r.Status != 200 || gjson.Get(r.Body, "choices.0.message.content").Str != "Hej!" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r.Header.Get("X-Service-Provider") != "sim-se" || r.Header.Get("X-Service-Residency") != "se-sto-1" || r.Header.Get("X-Service-Policy") != "se" {
		t.Errorf("service headers %v", r.Header)
	}
	up := g.Up.lastBody()
	if gjson.Get(up, "model").Str != fixture.UpstreamChatSE || gjson.Get(up, "stream_options").Exists() {
		t.Errorf("upstream body %s", up)
	}
	recs := g.Meter.Records()
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	rec := recs[0]
	want := usage.Record{RequestID: r.Header.Get("X-Request-Id"), AccountID: fixture.AcctSE, Model: fixture.ModelChat,
		Endpoint: "/v1/chat/completions", Provider: "sim-se", Residency: "se-sto-1", Status: 200, Result: "ok",
		PromptTokens: 12, CompletionTokens: 3, PriceMicroSEK: 180 + 180}
	got := *rec
	if got.KeyID == nil || *got.KeyID != g.Keys.IDs["se"] || got.Routing == nil || got.Routing.Policy != "se" ||
		len(got.Routing.Attempts) != 1 || got.Routing.Attempts[0].Route != fixture.RouteChatSE || got.Routing.Attempts[0].Status != 200 {
		t.Errorf("record identity/routing %+v %+v", got, got.Routing)
	}
	got.KeyID, got.Routing, got.TS, got.DurationMS = nil, nil, want.TS, 0
	if got != want {
		t.Errorf("record\n got %+v\nwant %+v", got, want)
	}
	// Spend lowers the spendable balance.
	if sp := g.Meter.Spendable(fixture.AcctSE); sp != 100_000_000-360 {
		t.Errorf("spendable %d", sp)
	}
}

func TestEmbeddingsAndCompletions(t *testing.T) {
	g := startGateway(t)
	r := g.do(t, "POST", "/v1/embeddings", g.Keys.SE, `{"model":"nomic-ai/nomic-embed-text-v1.5","input":"search_query: hej"}`)
	if r.Status != 200 || gjson.Get(r.Body, "object").Str != "list" {
		t.Fatalf("embeddings %d %s", r.Status, r.Body)
	}
	r = g.do(t, "POST", "/v1/completions", g.Keys.SE, `{"model":"llama8b","prompt":"Hej"}`)
	if r.Status != 200 || gjson.Get(r.Body, "choices.0.text").Str != "hi" {
		t.Fatalf("completions %d %s", r.Status, r.Body)
	}
	recs := g.Meter.Records()
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	// Embeddings: 8 input tokens at 200 öre/M = 16 micro-SEK, output never billed.
	if e := recs[0]; e.PromptTokens != 8 || e.CompletionTokens != 0 || e.PriceMicroSEK != 16 || e.Endpoint != "/v1/embeddings" {
		t.Errorf("embeddings record %+v", e)
	}
	if c := recs[1]; c.PromptTokens != 5 || c.CompletionTokens != 2 || c.PriceMicroSEK != 75+120 {
		t.Errorf("completions record %+v", c)
	}
	// Chat model has no embeddings route: 400 unsupported_protocol.
	checkEnvelope(t, g.do(t, "POST", "/v1/embeddings", g.Keys.SE, `{"model":"llama8b","input":"x"}`), 400, "unsupported_protocol")
}

func TestBadInputGetsEnvelopes(t *testing.T) {
	g := startGateway(t)
	cases := []struct {
		name, path, key, body string
		status                int
		code                  string
	}{
		{"malformed json", "/v1/chat/completions", g.Keys.SE, `{"model":`, 400, "invalid_request_error"},
		{"not an object", "/v1/chat/completions", g.Keys.SE, `[1,2]`, 400, "invalid_request_error"},
		{"missing model", "/v1/chat/completions", g.Keys.SE, `{"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error"},
		{"unknown model", "/v1/chat/completions", g.Keys.SE, `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}`, 404, "model_not_found"},
		{"hidden model", "/v1/chat/completions", g.Keys.SE, `{"model":"mistral-small","messages":[{"role":"user","content":"x"}]}`, 404, "model_not_found"},
		{"wrong key", "/v1/chat/completions", "sgw_nope", chatBody, 401, "invalid_api_key"},
		{"no key", "/v1/chat/completions", "", chatBody, 401, "invalid_api_key"},
		{"empty body", "/v1/chat/completions", g.Keys.SE, ``, 400, "invalid_request_error"},
		{"broke account", "/v1/chat/completions", g.Keys.Broke, chatBody, 402, "insufficient_quota"},
		{"unknown path", "/v1/nope", "", ``, 404, "endpoint_not_found"},
		{"unknown root path", "/nope", "", ``, 404, "endpoint_not_found"},
		{"unsupported family", "/v1/files", "", ``, 501, "endpoint_not_supported"},
		{"unsupported child", "/v1/vector_stores/vs_1/files", "", ``, 501, "endpoint_not_supported"},
		{"stored completion", "/v1/chat/completions/chatcmpl-1", "", ``, 501, "endpoint_not_supported"},
		{"wrong method", "/v1/chat/completions", g.Keys.SE, ``, 405, "method_not_allowed"},
		{"max_tokens fills the context window", "/v1/chat/completions", g.Keys.SE,
			`{"model":"llama8b","max_tokens":8192,"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error"},
		{"prompt beyond the context window", "/v1/chat/completions", g.Keys.SE,
			`{"model":"llama8b","max_tokens":100,"messages":[{"role":"user","content":"` + strings.Repeat("ord ", 12000) + `"}]}`, 400, "invalid_request_error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			method := "POST"
			if c.name == "wrong method" {
				method = "GET"
			}
			r := g.do(t, method, c.path, c.key, c.body)
			checkEnvelope(t, r, c.status, c.code)
		})
	}
	if n := g.Meter.Count(); n != 0 {
		t.Errorf("pre-routing refusals recorded: %d", n)
	}
	// OPTIONS: 204 with Allow.
	r := g.do(t, "OPTIONS", "/v1/chat/completions", "", "")
	if r.Status != 204 || !strings.Contains(r.Header.Get("Allow"), "POST") {
		t.Errorf("OPTIONS %d %v", r.Status, r.Header)
	}
}

func TestBodyTooLarge(t *testing.T) {
	g := startGateway(t)
	// Declare a body over the limit and send only its start: the gateway must answer from
	// the headers, before the body is buffered.
	conn, err := net.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"model\":", g.Keys.SE, MaxBodySize+1)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	checkEnvelope(t, result{resp.StatusCode, resp.Header, string(b)}, 413, "request_too_large")
}

func TestUpstreamErrors(t *testing.T) {
	// A non-streaming answer arrives whole when generation ends: its wait is bounded by the
	// total timeout, not the first-byte one.
	g := startGateway(t, func(c *Config) {
		c.Pool = proxy.NewPool(proxy.Config{FirstByteTimeout: 300 * time.Millisecond, TotalTimeout: 300 * time.Millisecond})
	})
	cases := []struct {
		mode   string
		status int
		code   string
		result string
	}{
		{"429", 429, "provider_rate_limited", usage.ResultRateLimited},
		{"500", 502, "provider_error", usage.ResultUpstreamError},
		{"400", 400, "provider_rejected", usage.ResultRejected},
		{"garbage", 502, "provider_error", usage.ResultUpstreamError},
		{"slow", 504, "provider_timeout", usage.ResultTimeout},
	}
	for i, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			r := g.do(t, "POST", "/v1/chat/completions", g.Keys.SE, `{"model":"llama8b","messages":[{"role":"user","content":"x"}],"test_mode":"`+c.mode+`"}`)
			checkEnvelope(t, r, c.status, c.code)
			if c.mode == "429" && r.Header.Get("Retry-After") != "7" {
				t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
			}
			if r.Header.Get("X-Service-Provider") != "sim-se" {
				t.Errorf("provider header missing after a tried route")
			}
			recs := g.Meter.Records()
			if len(recs) != i+1 {
				t.Fatalf("%d records", len(recs))
			}
			if rec := recs[i]; rec.Status != c.status || rec.Result != c.result || rec.PriceMicroSEK != 0 {
				t.Errorf("record %+v", rec)
			}
		})
	}
	// Connect failure: route to a closed port. Known unreachable, it answers like a
	// misconfigured route: 503, not a 502 inviting a retry.
	s, ks := fixture.Snapshot(3, "http://127.0.0.1:1/v1", g.Snap.GeneratedAt)
	x, _ := index.Build(s)
	g.Store.Swap(x)
	g.Meter.SeedBalances(s.Balances, s.BalanceSeq+1)
	r := g.do(t, "POST", "/v1/chat/completions", ks.SE, chatBody)
	checkEnvelope(t, r, 503, "no_route_available")
	if msg := gjson.Get(r.Body, "error.message").Str; !strings.Contains(msg, "cannot be reached") || r.Header.Get("Retry-After") != "60" {
		t.Errorf("unreachable route: %q, Retry-After %q", msg, r.Header.Get("Retry-After"))
	}
	recs := g.Meter.Records()
	if a := recs[len(recs)-1].Routing.Attempts[0]; a.Error != "connect" {
		t.Errorf("attempt %+v", a)
	}
}

// otherLastHex returns the secret with its last hex digit changed (always a different key).
func otherLastHex(secret string) string {
	last := "0"
	if secret[len(secret)-1] == '0' {
		last = "1"
	}
	return secret[:len(secret)-1] + last
}
