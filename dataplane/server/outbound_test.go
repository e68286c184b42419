package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// lengthServer is a model server that limits an answer the way llama.cpp does: n_predict
// before max_tokens, max_completion_tokens never read (tools/server/server-common.cpp).
// With ignore it reads no length field at all and generates 50 tokens. Each token is the
// 5-byte word "tokn ".
type lengthServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
	ignore bool
}

func newLengthServer(t *testing.T) *lengthServer {
	ls := &lengthServer{}
	ls.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ls.mu.Lock()
		ls.bodies = append(ls.bodies, string(b))
		ignore := ls.ignore
		ls.mu.Unlock()
		n := int64(16)
		if v := gjson.GetBytes(b, "n_predict"); v.Exists() {
			n = v.Int()
		} else if v := gjson.GetBytes(b, "max_tokens"); v.Exists() {
			n = v.Int()
		}
		if ignore {
			n = 50
		}
		if gjson.GetBytes(b, "stream").Bool() {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n")
			for range n {
				fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"tokn "},"finish_reason":null}]}`+"\n\n")
			}
			fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`+"\n\n")
			fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":%d,"total_tokens":%d}}`+"\n\ndata: [DONE]\n\n", n, n+3)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":%d,"total_tokens":%d}}`,
			strings.Repeat("tokn ", int(n)), n, n+3)
	}))
	t.Cleanup(ls.Close)
	return ls
}

func (ls *lengthServer) last() string {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.bodies[len(ls.bodies)-1]
}

// TestOutputBoundHoldsOnEveryServer: a server that reads its own length field generates no
// more than the request's bound (the field is rewritten to it before forwarding), streamed
// or not; one that reads no length field at all is charged for what it reports, up to what
// its answer holds, instead of the answer being dropped as a 502.
func TestOutputBoundHoldsOnEveryServer(t *testing.T) {
	ls := newLengthServer(t)
	g := startSimGateway(t, []snapshot.Route{chatRoute("a", "p", ls.URL+"/v1", "SE", 0, 1)})
	const msgs = `"messages":[{"role":"user","content":"Hej"}]`
	n := 0
	t.Run("non-streaming n_predict", func(t *testing.T) {
		r := g.post(t, g.Keys.SE, `{"model":"`+fixture.ModelChat+`",`+msgs+`,"max_tokens":1,"n_predict":2000}`)
		n++
		if r.Status != 200 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		if got := gjson.Get(ls.last(), "n_predict").Int(); got != 1 {
			t.Errorf("forwarded n_predict %d, want 1", got)
		}
		if rec := g.record(t, n); rec.CompletionTokens != 1 {
			t.Errorf("charged %d output tokens, want 1", rec.CompletionTokens)
		}
	})
	t.Run("streaming n_predict", func(t *testing.T) {
		r := g.post(t, g.Keys.SE, `{"model":"`+fixture.ModelChat+`",`+msgs+`,"max_tokens":1,"n_predict":2000,"stream":true}`)
		n++
		if r.Status != 200 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		if got := strings.Count(r.Body, "tokn "); got != 1 {
			t.Errorf("delivered %d tokens, want 1", got)
		}
		if rec := g.record(t, n); rec.CompletionTokens != 1 || rec.Result != usage.ResultOK {
			t.Errorf("charged %d output tokens (%s), want 1, ok: a stream within its bound is not cut", rec.CompletionTokens, rec.Result)
		}
	})
	t.Run("max_completion_tokens larger than max_tokens", func(t *testing.T) {
		r := g.post(t, g.Keys.SE, `{"model":"`+fixture.ModelChat+`",`+msgs+`,"max_tokens":2,"max_completion_tokens":40}`)
		n++
		if r.Status != 200 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		if rec := g.record(t, n); rec.CompletionTokens != 2 {
			t.Errorf("charged %d output tokens, want 2", rec.CompletionTokens)
		}
	})
	t.Run("server reads no length field", func(t *testing.T) {
		ls.mu.Lock()
		ls.ignore = true
		ls.mu.Unlock()
		r := g.post(t, g.Keys.SE, `{"model":"`+fixture.ModelChat+`",`+msgs+`,"max_tokens":5}`)
		n++
		if r.Status != 200 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		rec := g.record(t, n)
		// 50 tokens reported; the answer's 250 bytes of text hold at least 50 at 5 bytes each.
		if rec.CompletionTokens != 50 || rec.Result != usage.ResultOK {
			t.Errorf("charged %d output tokens (%s), want the 50 generated", rec.CompletionTokens, rec.Result)
		}
	})
	t.Run("stream from a server that reads no length field", func(t *testing.T) {
		r := g.post(t, g.Keys.SE, `{"model":"`+fixture.ModelChat+`",`+msgs+`,"max_tokens":5,"stream":true}`)
		n++
		if r.Status != 200 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		// Cut at the bound exactly (streamCut): the client receives what it is charged.
		if got := strings.Count(r.Body, "tokn "); got != 5 {
			t.Errorf("delivered %d of the 50 tokens, want the 5 of the bound", got)
		}
		if !strings.Contains(r.Body, "past the request's output limit") || strings.Contains(r.Body, "[DONE]") {
			t.Errorf("the stream did not end with the bound's error event: %s", r.Body)
		}
		rec := g.record(t, n)
		if rec.CompletionTokens != 5 || rec.Result != usage.ResultIncomplete {
			t.Errorf("charged %d output tokens (%s), want the 5 delivered, incomplete", rec.CompletionTokens, rec.Result)
		}
		if a := rec.Routing.Attempts; len(a) != 1 || a[0].Error != "" {
			t.Errorf("attempts %+v: the cut is not the route's failure", a)
		}
	})
}

// TestOutputBoundNativeProtocols: a Messages-style or Responses-style body forwarded to a
// route that speaks it natively gets its length fields bounded too.
func TestOutputBoundNativeProtocols(t *testing.T) {
	ls := newLengthServer(t)
	rt := chatRoute("a", "p", ls.URL+"/v1", "SE", 0, 1)
	rt.Protocols = []string{snapshot.EndpointChat, snapshot.EndpointMessages, snapshot.EndpointResponses}
	g := startSimGateway(t, []snapshot.Route{rt})
	for _, c := range []struct{ path, body string }{
		{"/v1/messages", `{"model":"` + fixture.ModelChat + `","max_tokens":3,"n_predict":2000,"messages":[{"role":"user","content":"Hej"}]}`},
		{"/v1/responses", `{"model":"` + fixture.ModelChat + `","max_output_tokens":3,"n_predict":2000,"input":"Hej"}`},
	} {
		req, _ := http.NewRequest("POST", g.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+g.Keys.SE)
		req.Header.Set("Content-Type", "application/json")
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := gjson.Get(ls.last(), "n_predict").Int(); got != 3 {
			t.Errorf("%s: forwarded n_predict %d, want 3 (body %s)", c.path, got, ls.last())
		}
	}
}

// TestOutputBoundWithinRecord: a request whose choices times output limit could pass what
// one record may hold is refused before it is served; one within it is served.
func TestOutputBoundWithinRecord(t *testing.T) {
	ls := newLengthServer(t)
	g := startSimGateway(t, []snapshot.Route{chatRoute("a", "p", ls.URL+"/v1", "SE", 0, 1)})
	g.withWindow(t, 131072)
	const msgs = `"messages":[{"role":"user","content":"Hej"}]`
	r := g.post(t, g.Keys.SE, `{"model":"`+fixture.ModelChat+`",`+msgs+`,"n":128}`)
	checkEnvelope(t, r, 400, "invalid_request_error")
	var env struct{ Error struct{ Param string } }
	_ = json.Unmarshal([]byte(r.Body), &env)
	if env.Error.Param != "n" {
		t.Errorf("param %q, want n", env.Error.Param)
	}
	if r := g.post(t, g.Keys.SE, `{"model":"`+fixture.ModelChat+`",`+msgs+`,"n":2,"max_tokens":3}`); r.Status != 200 {
		t.Fatalf("within the bound: %d %s", r.Status, r.Body)
	}
	if g.Meter.Count() != 1 {
		t.Errorf("%d records, want 1 (the refusal is not recorded)", g.Meter.Count())
	}
}

// withWindow installs a copy of g's snapshot whose chat model has the given context window.
func (g *simGateway) withWindow(t testing.TB, window int64) {
	t.Helper()
	s := *g.Snap
	s.Version++
	s.Models = append([]snapshot.Model(nil), g.Snap.Models...)
	for i := range s.Models {
		if s.Models[i].ID == fixture.ModelChat {
			s.Models[i].ContextTokens = window
		}
	}
	x, err := index.Build(&s)
	if err != nil {
		t.Fatal(err)
	}
	g.Store.Swap(x)
	g.Snap = &s
}
