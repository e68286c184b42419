package server

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/catalog"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/dataplane/proxy"
)

// BenchmarkTranslatedMessagesNonStreaming drives a Messages-style request through the
// fixture's chat route that allows translation, in process: auth, parse, translation to
// chat completions, forward over a pooled connection, translation of the answer back and
// the record.
func BenchmarkTranslatedMessagesNonStreaming(b *testing.B) {
	ln := benchUpstream(b)
	snap, ks := fixture.Snapshot(1, "http://upstream.test/v1", time.Now())
	x, err := catalog.Build(snap)
	if err != nil {
		b.Fatal(err)
	}
	store := &catalog.Store{}
	store.Swap(x)
	pool := proxy.NewPool(proxy.Config{})
	m, _ := x.Model(fixture.ModelChat)
	pool.SetDialForTest(m.Routes[0], func(string) (net.Conn, error) { return ln.Dial() })
	meter := &nopMeter{}
	s, err := New(Config{Store: store, Meter: meter, Pool: pool})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"model":"` + fixture.ModelChat + `","max_tokens":64,"system":"be brief","messages":[{"role":"user","content":"` + strings.Repeat("Hej hopp ", 100) + `"}]}`)
	var ctx fasthttp.RequestCtx
	ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
	h := s.Handler()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI("/v1/messages")
		ctx.Request.Header.Set("x-api-key", ks.SE)
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

// BenchmarkTranslatedStreamRelay translates a 100-chunk chat stream into Messages-style
// events written to a discarding writer, flushing per event.
func BenchmarkTranslatedStreamRelay(b *testing.B) {
	var sb strings.Builder
	for range 100 {
		sb.WriteString("data: " + streamChunks[1] + "\n\n")
	}
	sb.WriteString("data: " + streamChunks[3] + "\n\ndata: [DONE]\n\n")
	in := []byte(sb.String())
	w := bufio.NewWriter(io.Discard)
	p := protocol{client: catalog.EPMessages, translate: true, model: "m"}
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		var resp fasthttp.Response
		resp.SetBodyRaw(in)
		st := proxy.OpenStream(&resp, catalog.EPChat, false, 0)
		p.relay(w, st)
		st.Close()
		if !st.Result.Done || st.Result.PromptTokens != 12 {
			b.Fatalf("%+v", st.Result)
		}
	}
}
