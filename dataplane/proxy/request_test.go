package proxy

import (
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Prepare sends the route's credential as Bearer, and for Messages-style upstreams also as
// x-api-key with an anthropic-version.
func TestPrepareHeaders(t *testing.T) {
	snap := &snapshot.Snapshot{Content: snapshot.Content{
		Models: []snapshot.Model{{ID: "m"}},
		Routes: []snapshot.Route{{ID: "r", Model: "m", BaseURL: "http://127.0.0.1:9/v1", CredentialsRef: "env:GATEWAY_CREDENTIAL_UPSTREAM",
			Protocols: []string{snapshot.EndpointChat, snapshot.EndpointMessages}, Country: "SE"}},
	}}
	x, err := index.Build(snap)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := x.Model("m")
	r := m.Routes[0]
	pool := NewPool(Config{Getenv: func(k string) string {
		if k == "GATEWAY_CREDENTIAL_UPSTREAM" {
			return "sekret"
		}
		return ""
	}})
	u := pool.For(r)
	tests := []struct {
		e                      index.Endpoint
		path, xAPIKey, version string
	}{
		{index.EPChat, "/v1/chat/completions", "", ""},
		{index.EPMessages, "/v1/messages", "sekret", MessagesVersion},
	}
	for _, tt := range tests {
		req := fasthttp.AcquireRequest()
		u.Prepare(req, r, tt.e, []byte(`{}`), "req_1", false)
		if got := string(req.Header.Peek("Authorization")); got != "Bearer sekret" {
			t.Errorf("%s: Authorization %q", tt.path, got)
		}
		if got := string(req.Header.Peek("x-api-key")); got != tt.xAPIKey {
			t.Errorf("%s: x-api-key %q", tt.path, got)
		}
		if got := string(req.Header.Peek("anthropic-version")); got != tt.version {
			t.Errorf("%s: anthropic-version %q", tt.path, got)
		}
		if got := string(req.URI().Path()); got != tt.path {
			t.Errorf("path %q, want %q", got, tt.path)
		}
		fasthttp.ReleaseRequest(req)
	}
}
