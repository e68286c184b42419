package server

import (
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/admit"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/dataplane/plan"
	"github.com/sekgate/gateway/dataplane/reqparse"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Which upstream bodies carry the account's cache_salt: chat and text completions (also a
// Messages-style request translated to chat) bound for vLLM or SGLang on a model with
// account isolation. Other servers get the client's body; shared models too.
func TestCacheSaltInUpstreamBody(t *testing.T) {
	const chat = `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"max_tokens":4`
	for _, tc := range []struct {
		name, server, isolation, path, body string
		want                                string // "acct": the account's salt; else the exact value, "" absent
	}{
		{"vllm", "vllm", "", "/v1/chat/completions", chat + `}`, "acct"},
		{"sglang", "sglang", "account", "/v1/chat/completions", chat + `}`, "acct"},
		{"vllm completions", "vllm", "", "/v1/completions", `{"model":"llama8b","prompt":"Hej","max_tokens":4}`, "acct"},
		{"vllm stream", "vllm", "", "/v1/chat/completions", chat + `,"stream":true}`, "acct"},
		{"vllm, translated messages", "vllm", "", "/v1/messages", chat + `}`, "acct"},
		{"client salt overwritten", "vllm", "", "/v1/chat/completions", chat + `,"cache_salt":"mine"}`, "acct"},
		{"server not named", "", "", "/v1/chat/completions", chat + `}`, ""},
		{"llama.cpp", "llamacpp", "", "/v1/chat/completions", chat + `}`, ""},
		{"tgi", "tgi", "", "/v1/chat/completions", chat + `}`, ""},
		{"ollama", "ollama", "", "/v1/chat/completions", chat + `}`, ""},
		{"openai", "openai", "", "/v1/chat/completions", chat + `,"cache_salt":"mine"}`, "mine"},
		{"shared model", "vllm", "shared", "/v1/chat/completions", chat + `}`, ""},
		{"shared model keeps client salt", "vllm", "shared", "/v1/chat/completions", chat + `,"cache_salt":"mine"}`, "mine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGateway(t)
			for i := range g.Snap.Routes {
				g.Snap.Routes[i].Server = tc.server
			}
			x := setIsolation(t, g.Snap, g.Store, tc.isolation)
			hdr := []string{}
			if tc.path == "/v1/messages" {
				hdr = []string{"anthropic-version", "2023-06-01"}
			}
			if r := g.do(t, "POST", tc.path, g.Keys.SE, tc.body, hdr...); r.Status != 200 {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
			acct, _ := x.Account(fixture.AcctSE)
			want := tc.want
			if want == "acct" {
				want = acct.CacheSalt
			}
			got := gjson.Get(g.Up.lastBody(), "cache_salt")
			if got.String() != want || got.Exists() != (want != "") {
				t.Fatalf("upstream cache_salt %s, want %q", got.Raw, want)
			}
			if strings.Contains(g.Up.lastBody(), fixture.AcctSE) {
				t.Fatal("the upstream body names the account")
			}
		})
	}
}

// The prefix key of a model with account isolation depends on the account; a shared
// model's does not.
func TestPrefixKeyPerAccount(t *testing.T) {
	snap, _ := fixture.Snapshot(1, "http://127.0.0.1:1/v1", time.Now())
	body := []byte(`{"model":"llama8b","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Hej"}]}`)
	req, perr := reqparse.Parse(snapshot.EndpointChat, body)
	if perr != nil {
		t.Fatal(perr)
	}
	for _, tc := range []struct {
		isolation string
		same      bool
	}{{"", false}, {"account", false}, {"shared", true}} {
		x := setIsolation(t, snap, &index.Store{}, tc.isolation)
		key := func(acct string) uint64 {
			a, _ := x.Account(acct)
			var c plan.Call
			if aerr := c.Make(admit.Principal{Idx: x, Acct: a}, index.EPChat, &req, body, time.Now()); aerr != nil {
				t.Fatal(aerr)
			}
			if !c.HasKey {
				t.Fatal("no prefix key")
			}
			return c.Key
		}
		if got := key(fixture.AcctSE) == key(fixture.AcctEU); got != tc.same {
			t.Errorf("isolation %q: same key for two accounts %v, want %v", tc.isolation, got, tc.same)
		}
	}
}
