package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sekgate/gateway/dataplane/openapi"
)

// documentAllow returns the x-gateway-allow of every supported path of the contract.
func documentAllow(t *testing.T) map[string]string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Document(), &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for p, item := range doc.Paths {
		if a, ok := item["x-gateway-allow"].(string); ok {
			out[p] = a
		}
	}
	return out
}

// concrete turns a path template into a request path.
func concrete(tmpl string) string {
	return strings.NewReplacer("{model}", "llama8b", "{id}", "req_0123456789").Replace(tmpl)
}

// TestAllowMatchesDocument: every supported path of the document exists on the server, and
// OPTIONS / wrong methods answer with exactly the document's Allow.
func TestAllowMatchesDocument(t *testing.T) {
	g := startGateway(t)
	allow := documentAllow(t)
	if len(allow) < 18 {
		t.Fatalf("document lists %d supported paths", len(allow))
	}
	for tmpl, want := range allow {
		path := concrete(tmpl)
		r := g.do(t, "OPTIONS", path, "", "")
		if strings.Contains(want, "OPTIONS") {
			if r.Status != 204 || r.Header.Get("Allow") != want || r.Body != "" {
				t.Errorf("OPTIONS %s: %d Allow %q body %q, want 204 Allow %q", path, r.Status, r.Header.Get("Allow"), r.Body, want)
			}
		} else {
			checkEnvelope(t, r, 405, "method_not_allowed")
			if r.Header.Get("Allow") != want {
				t.Errorf("OPTIONS %s: Allow %q, want %q", path, r.Header.Get("Allow"), want)
			}
		}
		for _, m := range []string{"PUT", "PATCH", "DELETE", "GET", "POST"} {
			if strings.Contains(want, m) {
				continue
			}
			r := g.do(t, m, path, "", "")
			checkEnvelope(t, r, 405, "method_not_allowed")
			if r.Header.Get("Allow") != want {
				t.Errorf("%s %s: Allow %q, want %q", m, path, r.Header.Get("Allow"), want)
			}
		}
	}
}

func TestPreflightGetsNoGrant(t *testing.T) {
	g := startGateway(t)
	for _, path := range []string{"/v1/chat/completions", "/v1/models", "/v1/messages", "/healthz"} {
		r := g.do(t, "OPTIONS", path, "", "", "Origin", "https://app.example", "Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "authorization, content-type")
		if r.Status != 204 {
			t.Errorf("preflight %s: %d", path, r.Status)
		}
		for h := range r.Header {
			if strings.HasPrefix(strings.ToLower(h), "access-control-") {
				t.Errorf("preflight %s: CORS header %s", path, h)
			}
		}
	}
	r := g.do(t, "GET", "/v1/models", g.Keys.SE, "", "Origin", "https://app.example")
	for h := range r.Header {
		if strings.HasPrefix(strings.ToLower(h), "access-control-") {
			t.Errorf("GET with Origin: CORS header %s", h)
		}
	}
}

func TestUnknownPathsAre404(t *testing.T) {
	g := startGateway(t)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v1"}, {"GET", "/v2/models"}, {"POST", "/v1/chat"}, {"OPTIONS", "/nope"},
		{"GET", "/v1/service/requests/a/b"}, {"POST", "/v1/messages/batches"}, {"HEAD", "/nope"},
		{"GET", "/v1/filesx"}, {"GET", "/healthz/"},
	} {
		r := g.do(t, tc.method, tc.path, "", "")
		if tc.method == "HEAD" {
			if r.Status != 404 || r.Body != "" || r.Header.Get("X-Request-Id") == "" {
				t.Errorf("HEAD %s: %d %q", tc.path, r.Status, r.Body)
			}
			continue
		}
		checkEnvelope(t, r, 404, "endpoint_not_found")
	}
}

// GET / is a landing page for a person; an API client asking for JSON keeps the JSON 404.
func TestLandingPage(t *testing.T) {
	g := startGateway(t)
	for _, tc := range []struct {
		method, accept string
		html           bool
	}{
		{"GET", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", true},
		{"GET", "*/*", true},
		{"GET", "", true},
		{"GET", "application/json", false},
		{"POST", "text/html", false},
	} {
		r := g.do(t, tc.method, "/", "", "", "Accept", tc.accept)
		if !tc.html {
			checkEnvelope(t, r, 404, "endpoint_not_found")
			continue
		}
		if r.Status != 200 || r.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
			!strings.Contains(r.Body, `href="/docs"`) || !strings.Contains(r.Body, `href="/openapi.json"`) ||
			!strings.Contains(r.Body, "<code>"+g.URL+"/v1</code>") {
			t.Errorf("%s / Accept %q: %d %q", tc.method, tc.accept, r.Status, r.Body)
		}
	}
}

func TestUnsupportedEverywhereWithoutAuth(t *testing.T) {
	g := startGateway(t, func(c *Config) { c.DocsURL = "https://reference.invalid/gateway" })
	paths := []string{"/v1/chat/completions/chatcmpl-1", "/v1/chat/completions/chatcmpl-1/messages",
		"/v1/responses/resp_1", "/v1/responses/resp_1/input_items", "/v1/responses/resp_1/cancel",
		"/v1/responses/input_tokens", "/v1/responses/compact"}
	for _, f := range unsupportedFamilies {
		paths = append(paths, f, f+"/x", f+"/x/y/z")
	}
	for _, p := range paths {
		for _, m := range []string{"GET", "POST", "DELETE", "PUT", "OPTIONS"} {
			r := g.do(t, m, p, "", `{"model":"llama8b"}`)
			checkEnvelope(t, r, 501, "endpoint_not_supported")
			if !strings.Contains(r.Body, `"documentation_url":"https://reference.invalid/gateway"`) {
				t.Errorf("%s %s: no documentation link: %s", m, p, r.Body)
			}
		}
	}
	if n := len(g.Up.paths); n != 0 {
		t.Fatalf("%d requests reached the upstream", n)
	}
	if n := len(g.Meter.Records()); n != 0 {
		t.Fatalf("%d records made", n)
	}
}

func TestDocsAndContract(t *testing.T) {
	g := startGateway(t)
	r := g.do(t, "GET", "/openapi.json", "", "")
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/json" || r.Body != string(openapi.WithServer(g.URL)) {
		t.Fatalf("/openapi.json: %d %q %d bytes", r.Status, r.Header.Get("Content-Type"), len(r.Body))
	}
	if strings.Contains(r.Body, "127.0.0.1:8080") || !strings.Contains(r.Body, `"url": "`+g.URL+`"`) {
		t.Errorf("/openapi.json servers do not name %s", g.URL)
	}
	if r := g.do(t, "HEAD", "/openapi.json", "", ""); r.Status != 200 || r.Body != "" {
		t.Fatalf("HEAD /openapi.json: %d %q", r.Status, r.Body)
	}
	// Without DocsURL, /docs is the node's own HTML rendering of its contract.
	r = g.noRedirect(t, "GET", "/docs")
	if r.Status != 200 || r.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("/docs: %d %q %q", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	for _, want := range []string{"<h1>Gateway inference service</h1>", "/v1/chat/completions", "Chat completion",
		"<code>" + g.URL + "/v1</code>", `href="/openapi.json"`} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("/docs lacks %q", want)
		}
	}
	for _, banned := range []string{"<script", "http://127.0.0.1:8080", "{base_url}", "cdn", `<link rel="stylesheet"`} {
		if strings.Contains(r.Body, banned) {
			t.Errorf("/docs holds %q", banned)
		}
	}
	g2 := startGateway(t, func(c *Config) { c.DocsURL = "https://reference.invalid/gateway" })
	for _, m := range []string{"GET", "HEAD"} {
		r = g2.noRedirect(t, m, "/docs")
		if r.Status != 302 || r.Header.Get("Location") != "https://reference.invalid/gateway" {
			t.Fatalf("%s /docs: %d %q", m, r.Status, r.Header.Get("Location"))
		}
	}
	// The 501 link without DocsURL is absolute too.
	r = g.do(t, "GET", "/v1/files", "", "")
	if !strings.Contains(r.Body, `"documentation_url":"`+g.URL+`/openapi.json"`) {
		t.Fatalf("501 without DocsURL: %s", r.Body)
	}
}

func TestHeadReadsHaveNoBody(t *testing.T) {
	g := startGateway(t)
	for _, p := range []string{"/healthz", "/v1/models", "/v1/models/llama8b", "/openapi.json"} {
		get := g.do(t, "GET", p, g.Keys.SE, "")
		head := g.do(t, "HEAD", p, g.Keys.SE, "")
		if head.Status != get.Status || head.Body != "" || head.Header.Get("Content-Type") != get.Header.Get("Content-Type") ||
			head.Header.Get("X-Request-Id") == "" {
			t.Errorf("HEAD %s: %d %q %q (GET %d)", p, head.Status, head.Body, head.Header.Get("Content-Type"), get.Status)
		}
	}
	// HEAD of an error keeps the status and headers.
	if r := g.do(t, "HEAD", "/v1/models/nope", g.Keys.SE, ""); r.Status != 404 || r.Body != "" {
		t.Errorf("HEAD unknown model: %d %q", r.Status, r.Body)
	}
}

// noRedirect sends a request without following redirects.
func (g *gateway) noRedirect(t *testing.T, method, path string) result {
	t.Helper()
	req, err := http.NewRequest(method, g.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{resp.StatusCode, resp.Header, string(b)}
}
