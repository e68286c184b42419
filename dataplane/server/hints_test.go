package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/dataplane/suggest"
	"github.com/sekgate/gateway/internal/simulator"
)

func TestPathHint(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		base     bool
	}{
		{"/chat/completions", "/v1/chat/completions", true},
		{"/v1/v1/chat/completions", "/v1/chat/completions", true},
		{"/v1/v1/v1/messages", "/v1/messages", true},
		{"/messages", "/v1/messages", true},
		{"/v1/v1/messages/count_tokens", "/v1/messages/count_tokens", true},
		{"/models/llama", "/v1/models/llama", true},
		{"/service/requests/req_1", "/v1/service/requests/req_1", true},
		{"/chat/completion", "/v1/chat/completions", true}, // no /v1 and a typo
		{"/v1/chat/completion", "/v1/chat/completions", false},
		{"/v1/chat/completions/", "/v1/chat/completions", false},
		{"/v1/Chat/Completions", "/v1/chat/completions", false},
		{"/v1/embedding", "/v1/embeddings", false},
		{"/v1/response", "/v1/responses", false},
		{"/v1/message", "/v1/messages", false},
		{"/v1/messages/count_token", "/v1/messages/count_tokens", false},
		{"/v1/service/acount", "/v1/service/account", false},
		{"/v1/service/request/req_AbC", "/v1/service/requests/req_AbC", false},
		{"/v1/modles/Llama-3", "/v1/models/Llama-3", false},
		{"/v1/system-one", "/v1/systemone", false},
		{"/healthzz", "/healthz", false},
		{"/openapi.yaml", "", false},
		{"/v1/chat/completions", "", false}, // a known path is not a mistake
		{"/v2/chat/completions", "/v1/chat/completions", false},
		{"/v1/somewhere/else/entirely", "", false},
		{"/", "", false},
		{"/v1/nope", "", false},
		{"/v1/no-such-path", "", false},
	} {
		got, base := suggest.Path([]byte(tt.in))
		if got != tt.want || (got != "" && base != tt.base) {
			t.Errorf("suggest.Path(%q) = %q, %v; want %q, %v", tt.in, got, base, tt.want, tt.base)
		}
	}
}

// Every path the router serves is one a mistyped path can be corrected to.
func TestKnownPathsCoverRoutes(t *testing.T) {
	known := map[string]bool{}
	for _, k := range suggest.KnownPaths {
		known[k.Path] = true
		if k.Parent {
			known[k.Path+"/*"] = true
		}
	}
	for _, e := range (&Server{}).endpoints() {
		p := e.path
		if i := strings.Index(p, "/{"); i >= 0 {
			p = p[:i] + "/*"
		}
		if !known[p] {
			t.Errorf("%s is not in suggest.KnownPaths", e.path)
		}
	}
}

// A client with a wrong base URL is told the path it meant, in its protocol's envelope; a
// model typo is answered with the closest models the account can use, never a hidden one.
func TestClientMistakeHints(t *testing.T) {
	g := startProtoGateway(t, simulator.Knobs{})
	for _, tc := range []struct {
		name, path, body, wantMsg string
		messagesShape             bool
	}{
		{"OpenAI SDK without /v1", "/chat/completions", `{"model":"sim-chat","messages":[]}`, "did you mean /v1/chat/completions?", false},
		{"OpenAI SDK with /v1 twice", "/v1/v1/chat/completions", `{}`, "did you mean /v1/chat/completions?", false},
		{"Anthropic SDK given /v1", "/v1/v1/messages", `{}`, "did you mean /v1/messages? Check the client's base URL: " + g.URL + " without /v1", true},
		{"OpenAI SDK base URL in the hint", "/chat/completions", `{}`, "Check the client's base URL: " + g.URL + "/v1 for OpenAI SDKs", false},
		{"typo", "/v1/chat/completion", `{}`, "unknown endpoint /v1/chat/completion; did you mean /v1/chat/completions?", false},
		{"Messages typo", "/v1/mesages", `{}`, "did you mean /v1/messages?", true},
		{"unknown path", "/v1/nope", `{}`, "unknown endpoint", false},
	} {
		r := g.do(t, "POST", tc.path, g.Key, tc.body)
		checkEnvelope(t, r, 404, "endpoint_not_found")
		var env struct {
			Type  string
			Error struct{ Message string }
		}
		if err := json.Unmarshal([]byte(r.Body), &env); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(env.Error.Message, tc.wantMsg) || (env.Type == "error") != tc.messagesShape {
			t.Errorf("%s: %s", tc.name, r.Body)
		}
	}
	chat := func(model string) string {
		r := g.do(t, "POST", "/v1/chat/completions", g.Key, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)
		checkEnvelope(t, r, 404, "model_not_found")
		return r.Body
	}
	if b := chat("sim-chta"); !strings.Contains(b, "did you mean sim-chat") {
		t.Errorf("typo: %s", b)
	}
	if b := chat("SIM-NATIVE"); !strings.Contains(b, "did you mean sim-native") {
		t.Errorf("case: %s", b)
	}
	if b := chat("sim-hidde"); strings.Contains(b, pmHidden) {
		t.Errorf("a hidden model was suggested: %s", b)
	}
	if b := chat("completely-different-name"); strings.Contains(b, "did you mean") {
		t.Errorf("far-off name got a suggestion: %s", b)
	}
}

// A model name is corrected among the account's models by prefix and by edits, aliases
// included; a model of another kind sent to the wrong endpoint is told the right one.
func TestModelAndEndpointHints(t *testing.T) {
	g := startGateway(t)
	for _, tc := range []struct {
		name, path, model string
		status            int
		code, want        string
	}{
		{"prefix of the ID", "/v1/chat/completions", "llama-3.1-8b", 404, "model_not_found", "did you mean " + fixture.ModelChat + "?"},
		{"typo of an alias", "/v1/chat/completions", "lama8b", 404, "model_not_found", "did you mean " + fixture.ModelChat + "?"},
		{"alias prefix, other case", "/v1/chat/completions", "Meta-Llama/Llama-3.1-8B", 404, "model_not_found", "did you mean " + fixture.ModelChat + "?"},
		{"embeddings typo", "/v1/embeddings", "nomic-embed-text", 404, "model_not_found", "did you mean " + fixture.ModelEmbed + "?"},
		{"embeddings model to chat", "/v1/chat/completions", fixture.ModelEmbed, 400, "unsupported_protocol",
			"the model " + fixture.ModelEmbed + " is not served on /v1/chat/completions; use /v1/embeddings"},
		{"chat model to embeddings", "/v1/embeddings", "llama8b", 400, "unsupported_protocol",
			"the model " + fixture.ModelChat + " is not served on /v1/embeddings; use /v1/chat/completions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"model":"` + tc.model + `","messages":[{"role":"user","content":"hi"}],"input":"hi"}`
			r := g.do(t, "POST", tc.path, g.Keys.SE, body)
			checkEnvelope(t, r, tc.status, tc.code)
			if !strings.Contains(r.Body, tc.want) {
				t.Errorf("want %q in %s", tc.want, r.Body)
			}
		})
	}
	// The empty account may use no model: nothing is suggested, not even a close one.
	r := g.do(t, "POST", "/v1/chat/completions", g.Keys.Empty, `{"model":"llama-3.1-8b","messages":[{"role":"user","content":"hi"}]}`)
	checkEnvelope(t, r, 404, "model_not_found")
	if strings.Contains(r.Body, "did you mean") {
		t.Errorf("a model the account may not use was suggested: %s", r.Body)
	}
}

// Hints name the base URL the client used: the configured public URL, else the request's
// Host when it is a plain host[:port], else the socket's address; published links use the
// public URL or the socket, never the Host.
func TestHintBaseURL(t *testing.T) {
	g := startGateway(t)
	for _, tc := range []struct{ host, want string }{
		{"gw.example:9000", "http://gw.example:9000/v1 for OpenAI SDKs"},
		{"[::1]:8443", "http://[::1]:8443/v1 for OpenAI SDKs"},
		{"evil\"<x>", g.URL + "/v1 for OpenAI SDKs"},
	} {
		raw := "GET /chat/completions HTTP/1.1\r\nHost: " + tc.host + "\r\nConnection: close\r\n\r\n"
		out, _ := rawExchange(t, g.URL, []byte(raw), 5*time.Second)
		if !strings.Contains(out, "Check the client's base URL: "+tc.want) || strings.Contains(out, "{base_url}") {
			t.Errorf("Host %q: %q", tc.host, out)
		}
	}
	const pub = "https://api.example.com"
	p := startGateway(t, func(c *Config) { c.PublicURL = pub + "/" })
	if r := p.do(t, "POST", "/v1/v1/messages", "", "{}"); !strings.Contains(r.Body, "Check the client's base URL: "+pub+" without /v1") {
		t.Errorf("hint with PublicURL: %s", r.Body)
	}
	if r := p.do(t, "GET", "/openapi.json", "", ""); !strings.Contains(r.Body, `"url": "`+pub+`"`) {
		t.Errorf("openapi.json servers with PublicURL: %.400s", r.Body)
	}
	if r := p.do(t, "GET", "/v1/files", "", ""); !strings.Contains(r.Body, `"documentation_url":"`+pub+`/openapi.json"`) {
		t.Errorf("501 link with PublicURL: %s", r.Body)
	}
	if _, err := New(Config{Store: g.Store, Meter: g.Meter, Settings: Settings{PublicURL: "ftp://x"}}); err == nil {
		t.Error("a PublicURL that is not http(s) was accepted")
	}
}
