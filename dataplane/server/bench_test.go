package server

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/dataplane/memmeter"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/relay"
	"github.com/sekgate/gateway/dataplane/tokens"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// nopMeter counts records without keeping them.
type nopMeter struct{ n int }

func (m *nopMeter) Record(*usage.Record)                   { m.n++ }
func (m *nopMeter) Start(*usage.Record)                    {}
func (m *nopMeter) Spendable(string) int64                 { return 1 << 40 }
func (m *nopMeter) SeedBalances([]snapshot.Balance, int64) {}

// inProcess is a data-plane server in front of an in-memory fasthttp upstream answering a
// fixed chat completion, driven without sockets, so that benchmarks and the allocation
// budget measure the gateway's own path rather than a model server or the network.
type inProcess struct {
	meter *nopMeter
	keys  fixture.Keys
	h     fasthttp.RequestHandler
	ctx   fasthttp.RequestCtx
	srv   *Server
}

// newInProcess builds the server over the fixture snapshot; with rewrite false the routes
// need no model rewrite (the common case).
func newInProcess(tb testing.TB, rewrite bool) *inProcess {
	tb.Helper()
	return newInProcessWith(tb, rewrite, nil)
}

// newInProcessWith is newInProcess with the server's configuration adjusted by conf.
func newInProcessWith(tb testing.TB, rewrite bool, conf func(*Config)) *inProcess {
	tb.Helper()
	ln := fasthttputil.NewInmemoryListener()
	answer := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hej!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`)
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		ctx.SetBody(answer)
	}}
	go srv.Serve(ln)
	tb.Cleanup(func() { ln.Close() })

	snap, ks := fixture.Snapshot(1, "http://upstream.test/v1", time.Now())
	if !rewrite {
		for i := range snap.Routes {
			snap.Routes[i].UpstreamModel = ""
		}
	}
	x, err := index.Build(snap)
	if err != nil {
		tb.Fatal(err)
	}
	store := &index.Store{}
	store.Swap(x)
	pool := proxy.NewPool(proxy.Config{})
	m, _ := x.Model(fixture.ModelChat)
	pool.SetDialForTest(m.Routes[0], func(string) (net.Conn, error) { return ln.Dial() })
	p := &inProcess{meter: &nopMeter{}, keys: ks}
	cfg := Config{Store: store, Meter: p.meter, Pool: pool}
	if conf != nil {
		conf(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	p.h, p.srv = s.Handler(), s
	p.ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
	return p
}

// post sends body to path with the given auth header, reusing one request context, and
// returns the status (the answer stays in p.ctx.Response).
func (p *inProcess) post(path, authHeader, authValue string, body []byte) int {
	p.ctx.Request.Reset()
	p.ctx.Response.Reset()
	p.ctx.Request.Header.SetMethod("POST")
	p.ctx.Request.SetRequestURI(path)
	p.ctx.Request.Header.Set(authHeader, authValue)
	p.ctx.Request.Header.SetContentType("application/json")
	p.ctx.Request.SetBodyRaw(body)
	p.h(&p.ctx)
	return p.ctx.Response.StatusCode()
}

// chatBenchBody is a 1 KiB non-streaming chat request.
var chatBenchBody = []byte(`{"model":"` + fixture.ModelChat + `","messages":[{"role":"user","content":"` + strings.Repeat("Hej hopp ", 100) + `"}],"max_tokens":64}`)

// BenchmarkChatNonStreaming drives the whole non-streaming chat path in process: request ID,
// auth, parse, route, body sent over a pooled upstream connection, usage extraction and
// the meter's record.
func BenchmarkChatNonStreaming(b *testing.B) {
	p := newInProcess(b, false)
	b.ReportAllocs()
	b.SetBytes(int64(len(chatBenchBody)))
	for b.Loop() {
		if st := p.post("/v1/chat/completions", "Authorization", "Bearer "+p.keys.SE, chatBenchBody); st != 200 {
			b.Fatalf("status %d: %s", st, p.ctx.Response.Body())
		}
	}
	if p.meter.n == 0 {
		b.Fatal("nothing recorded")
	}
}

func BenchmarkAuthLookup(b *testing.B) {
	snap, ks := fixture.Snapshot(1, "http://upstream.test/v1", time.Now())
	x, _ := index.Build(snap)
	store := &index.Store{}
	store.Swap(x)
	s, _ := New(Config{Store: store, Meter: memmeter.New(0)})
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.Set("Authorization", "Bearer "+ks.SE)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.admit.Authenticate(&ctx, false, true); err != nil {
			b.Fatal(err)
		}
	}
}

// chatStream100 is a recorded chat stream of 100 content chunks, its usage chunk and [DONE].
func chatStream100() []byte {
	var sb strings.Builder
	for range 100 {
		sb.WriteString("data: " + streamChunks[1] + "\n\n")
	}
	sb.WriteString("data: " + streamChunks[3] + "\n\ndata: [DONE]\n\n")
	return []byte(sb.String())
}

// BenchmarkSSERelay relays a 100-event chat stream (usage chunk dropped) to a discarding
// writer, flushing per event.
func BenchmarkSSERelay(b *testing.B) {
	in := chatStream100()
	w := bufio.NewWriter(io.Discard)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		var resp fasthttp.Response
		resp.SetBodyRaw(in)
		st := proxy.OpenStream(&resp, index.EPChat, proxy.StreamOptions{DropUsageOnly: true, Bounds: tokens.NewBounds(8192, 0, 1)})
		rel := relay.Protocol{Client: index.EPChat}.Relay(w, st)
		st.Close()
		if !rel.Done || rel.Events != 101 || st.Result.PromptTokens != 12 {
			b.Fatalf("%+v %+v", st.Result, rel)
		}
	}
}
