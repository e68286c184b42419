package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sekgate/gateway/dataplane/cplink"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/shared/internalapi"
)

// An account path goes to the control plane over the node's link: the node's credentials,
// the authenticated account and the request ID in their headers, the client's own
// credentials and internal headers dropped, the body passed; the control plane's answer
// is relayed, a redirect included (not followed).
func TestForwardOverLink(t *testing.T) {
	type seen struct {
		method, uri, body string
		h                 http.Header
	}
	got := make(chan seen, 1)
	cp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.RequestURI, string(b), r.Header.Clone()}
		w.Header().Set("Location", "https://site.example/thanks")
		w.Header().Set("X-Internal", "not relayed")
		w.WriteHeader(http.StatusSeeOther)
		io.WriteString(w, "see other")
	}))
	defer cp.Close()
	link, err := cplink.New(cplink.Config{URL: cp.URL, NodeID: "node-1", NodeToken: "node-token"})
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, func(cfg *Config) { cfg.Link = link })

	r := g.do(t, "POST", "/v1/service/topup?x=1", g.Keys.SE, `{"amount_sek":100}`,
		internalapi.HeaderAccountID, "forged", internalapi.HeaderNodeID, "forged")
	s := <-got
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "https://site.example/thanks" ||
		r.Header.Get("X-Internal") != "" || r.Body != "see other" {
		t.Errorf("relayed %d %v %q", r.Status, r.Header, r.Body)
	}
	if s.method != "POST" || s.uri != "/v1/service/topup?x=1" || s.body != `{"amount_sek":100}` {
		t.Errorf("control plane got %s %s %q", s.method, s.uri, s.body)
	}
	if s.h.Get("Authorization") != "Bearer node-token" || s.h.Get(internalapi.HeaderNodeID) != "node-1" ||
		s.h.Get(internalapi.HeaderAccountID) == "forged" || s.h.Get(internalapi.HeaderAccountID) == "" ||
		s.h.Get(internalapi.HeaderKeyID) == "" || s.h.Get(internalapi.HeaderRequestID) != r.Header.Get("X-Request-Id") {
		t.Errorf("control plane got headers %v", s.h)
	}

	// Without a link the account paths answer 503.
	g = startGateway(t)
	if r := g.do(t, "POST", "/v1/service/signup", "", "name=a"); r.Status != http.StatusServiceUnavailable {
		t.Errorf("no link: %d %s", r.Status, r.Body)
	}
}

// A suspended account still reads GET /v1/service/account (its balance and why it is
// suspended), while inference, the other account paths and model reads stay refused.
func TestSuspendedReadsAccount(t *testing.T) {
	got := make(chan string, 4)
	cp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Method + " " + r.URL.Path + " " + r.Header.Get(internalapi.HeaderAccountID)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"suspended":true}`)
	}))
	defer cp.Close()
	link, err := cplink.New(cplink.Config{URL: cp.URL, NodeID: "node-1", NodeToken: "node-token"})
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, func(cfg *Config) { cfg.Link = link })
	for _, m := range []string{"GET", "HEAD"} {
		r := g.do(t, m, "/v1/service/account", g.Keys.Suspended, "")
		if r.Status != 200 {
			t.Fatalf("%s account of a suspended account: %d %s", m, r.Status, r.Body)
		}
		if s := <-got; s != "GET /v1/service/account "+fixture.AcctSuspended {
			t.Errorf("control plane got %q", s)
		}
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/service/requests", ""},
		{"POST", "/v1/service/topup", `{"amount_sek":100}`},
		{"GET", "/v1/models", ""},
		{"POST", "/v1/chat/completions", `{"model":"llama8b","messages":[{"role":"user","content":"hi"}]}`},
	} {
		checkEnvelope(t, g.do(t, c.method, c.path, g.Keys.Suspended, c.body), 403, "account_suspended")
	}
	if len(got) != 0 {
		t.Errorf("a refused request reached the control plane: %q", <-got)
	}
	// Other refusals still hold on the account read: an unknown key is 401.
	checkEnvelope(t, g.do(t, "GET", "/v1/service/account", "sgw_0123456789ab_"+strings.Repeat("0", 40), ""), 401, "invalid_api_key")
}
