package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/dataplane/memmeter"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/shared/snapshot"
)

// fakeUpstream is a tiny OpenAI-style model server. The body field "test_mode" picks a
// behaviour; every request's body is kept for inspection.
type fakeUpstream struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
	paths  []string
	gone   chan struct{} // closed when a streaming client went away
	once   sync.Once
}

func newFakeUpstream(t testing.TB) *fakeUpstream {
	f := &fakeUpstream{gone: make(chan struct{})}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeUpstream) lastBody() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) == 0 {
		return ""
	}
	return f.bodies[len(f.bodies)-1]
}

func (f *fakeUpstream) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, string(b))
	f.paths = append(f.paths, r.URL.Path)
	f.mu.Unlock()
	mode := gjson.GetBytes(b, "test_mode").Str
	model := gjson.GetBytes(b, "model").Str
	switch mode {
	case "429":
		w.Header().Set("Retry-After", "7")
		http.Error(w, `{"error":{"message":"busy"}}`, 429)
		return
	case "500":
		http.Error(w, "boom", 500)
		return
	case "400":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		io.WriteString(w, `{"object":"error","message":"context length exceeded","code":400}`)
		return
	case "garbage":
		io.WriteString(w, "<html>not json")
		return
	case "slow": // past the gateway's 300 ms first-byte timeout, or gone with the gateway
		select {
		case <-r.Context().Done():
			return
		case <-time.After(600 * time.Millisecond):
		}
	}
	if gjson.GetBytes(b, "stream").Bool() {
		f.stream(w, r, mode, model)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/v1/embeddings":
		fmt.Fprintf(w, `{"object":"list","model":%q,"data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"usage":{"prompt_tokens":8,"total_tokens":8}}`, model)
	case "/v1/completions":
		fmt.Fprintf(w, `{"id":"cmpl-1","object":"text_completion","model":%q,"choices":[{"index":0,"text":"hi","finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`, model)
	default:
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"Hej!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`, model)
	}
}

// streamChunks is the recorded upstream stream used by streaming tests and the golden file.
var streamChunks = []string{
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hej"},"finish_reason":null}]}`,
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" då"},"finish_reason":"stop"}]}`,
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":2,"total_tokens":14}}`,
}

func (f *fakeUpstream) stream(w http.ResponseWriter, r *http.Request, mode, model string) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	gap := time.Duration(0)
	if mode == "sleepy" {
		gap = 150 * time.Millisecond
	}
	for i, c := range streamChunks {
		if i == len(streamChunks)-1 && !gjson.Get(f.lastBody(), "stream_options.include_usage").Bool() {
			break
		}
		if mode == "break" && i == 2 {
			// Die mid-stream: hijack and close without the chunk terminator.
			if hj, ok := w.(http.Hijacker); ok {
				conn, _, _ := hj.Hijack()
				conn.Close()
			}
			return
		}
		if i > 0 && mode == "comment" {
			io.WriteString(w, ": keep-alive\n\n")
		}
		fmt.Fprintf(w, "data: %s\n\n", c)
		fl.Flush()
		if gap > 0 {
			select {
			case <-time.After(gap):
			case <-r.Context().Done():
				f.once.Do(func() { close(f.gone) })
				return
			}
		}
		if mode == "endless" && i == 1 {
			// Keep sending until the client goes away.
			for {
				select {
				case <-r.Context().Done():
					f.once.Do(func() { close(f.gone) })
					return
				case <-time.After(20 * time.Millisecond):
					fmt.Fprintf(w, "data: %s\n\n", streamChunks[1])
					fl.Flush()
				}
			}
		}
	}
	io.WriteString(w, "data: [DONE]\n\n")
	fl.Flush()
}

// gateway is a running data-plane server for tests.
type gateway struct {
	URL   string
	Store *index.Store
	Meter *memmeter.Meter
	Keys  fixture.Keys
	Up    *fakeUpstream
	Srv   *Server
	Snap  *snapshot.Snapshot
}

func startGateway(t testing.TB, opts ...func(*Config)) *gateway {
	t.Helper()
	up := newFakeUpstream(t)
	snap, ks := fixture.Snapshot(1, up.URL+"/v1", time.Now())
	g := &gateway{Store: &index.Store{}, Meter: memmeter.New(0), Keys: ks, Up: up, Snap: snap}
	x, err := index.Build(snap)
	if err != nil {
		t.Fatal(err)
	}
	g.Store.Swap(x)
	g.Meter.SeedBalances(snap.Balances, snap.BalanceSeq)
	cfg := Config{Store: g.Store, Meter: g.Meter, Pool: proxy.NewPool(proxy.Config{FirstByteTimeout: 300 * time.Millisecond})}
	for _, o := range opts {
		o(&cfg)
	}
	g.Srv, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Srv.Serve(ln)
	t.Cleanup(func() { _ = g.Srv.Shutdown() })
	g.URL = "http://" + ln.Addr().String()
	return g
}

type result struct {
	Status int
	Header http.Header
	Body   string
}

func (g *gateway) do(t testing.TB, method, path, key, body string, hdr ...string) result {
	t.Helper()
	req, err := http.NewRequest(method, g.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{resp.StatusCode, resp.Header, string(b)}
}

// noRedirects shows the tests the gateway's own answer, a redirect included.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// checkEnvelope asserts a JSON error envelope with the given status and code/type.
func checkEnvelope(t testing.TB, r result, status int, code string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body %s", r.Status, status, r.Body)
	}
	if !strings.HasPrefix(r.Header.Get("X-Request-Id"), "req_") {
		t.Errorf("missing X-Request-Id: %q", r.Header.Get("X-Request-Id"))
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Errorf("content-type %q", r.Header.Get("Content-Type"))
	}
	var env struct {
		Error struct {
			Type, Message string
			Code, Param   *string
		}
	}
	if err := json.Unmarshal([]byte(r.Body), &env); err != nil || env.Error.Type == "" || env.Error.Message == "" {
		t.Fatalf("not an envelope: %s (%v)", r.Body, err)
	}
	if code != "" && (env.Error.Code == nil || *env.Error.Code != code) && env.Error.Type != code {
		t.Errorf("code %v type %s, want %s; body %s", env.Error.Code, env.Error.Type, code, r.Body)
	}
}
