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

	"github.com/sekgate/gateway/dataplane/catalog"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/dataplane/memmeter"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// nopMeter counts records without keeping them.
type nopMeter struct{ n int }

func (m *nopMeter) Record(*usage.Record)                   { m.n++ }
func (m *nopMeter) Spendable(string) int64                 { return 1 << 40 }
func (m *nopMeter) SeedBalances([]snapshot.Balance, int64) {}

// benchUpstream is a fasthttp upstream on an in-memory listener answering a fixed chat
// completion, so the benchmark measures the gateway rather than a model server.
func benchUpstream(b *testing.B) *fasthttputil.InmemoryListener {
	ln := fasthttputil.NewInmemoryListener()
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hej!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`)
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		ctx.SetBody(body)
	}}
	go srv.Serve(ln)
	b.Cleanup(func() { ln.Close() })
	return ln
}

// BenchmarkChatNonStreaming drives the whole non-streaming chat path in process: request ID,
// auth, parse, route, body forward over a pooled upstream connection, usage extraction and
// the meter's record.
func BenchmarkChatNonStreaming(b *testing.B) {
	ln := benchUpstream(b)
	snap, ks := fixture.Snapshot(1, "http://upstream.test/v1", time.Now())
	for i := range snap.Routes {
		snap.Routes[i].UpstreamModel = "" // no model rewrite: the common case
	}
	x, err := catalog.Build(snap)
	if err != nil {
		b.Fatal(err)
	}
	store := &catalog.Store{}
	store.Swap(x)
	pool := proxy.NewPool(proxy.Config{})
	// Point the upstream's client at the in-memory listener.
	m, _ := x.Model(fixture.ModelChat)
	pool.SetDialForTest(m.Routes[0], func(string) (net.Conn, error) { return ln.Dial() })
	meter := &nopMeter{}
	s, err := New(Config{Store: store, Meter: meter, Pool: pool})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"model":"` + fixture.ModelChat + `","messages":[{"role":"user","content":"` + strings.Repeat("Hej hopp ", 100) + `"}],"max_tokens":64}`)
	var ctx fasthttp.RequestCtx
	ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
	h := s.Handler()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI("/v1/chat/completions")
		ctx.Request.Header.Set("Authorization", "Bearer "+ks.SE)
		ctx.Request.Header.SetContentType("application/json")
		ctx.Request.SetBodyRaw(body)
		h(&ctx)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
	if meter.n == 0 {
		b.Fatal("nothing recorded")
	}
}

func BenchmarkAuthLookup(b *testing.B) {
	snap, ks := fixture.Snapshot(1, "http://upstream.test/v1", time.Now())
	x, _ := catalog.Build(snap)
	store := &catalog.Store{}
	store.Swap(x)
	s, _ := New(Config{Store: store, Meter: memmeter.New(0)})
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.Set("Authorization", "Bearer "+ks.SE)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.authenticate(&ctx, false, true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSSERelay relays a 100-event chat stream (usage chunk dropped) to a discarding
// writer, flushing per event.
func BenchmarkSSERelay(b *testing.B) {
	var sb strings.Builder
	for range 100 {
		sb.WriteString("data: " + streamChunks[1] + "\n\n")
	}
	sb.WriteString("data: " + streamChunks[3] + "\n\ndata: [DONE]\n\n")
	in := []byte(sb.String())
	w := bufio.NewWriter(io.Discard)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		var resp fasthttp.Response
		resp.SetBodyRaw(in)
		st := proxy.OpenStream(&resp, catalog.EPChat, true, 0)
		st.Relay(w)
		st.Close()
		if !st.Result.Done || st.Result.Events != 101 || st.Result.PromptTokens != 12 {
			b.Fatalf("%+v", st.Result)
		}
	}
}
