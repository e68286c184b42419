package proxy

import (
	"bufio"
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/snapshot"
)

// TestDoReadsBodiesWhole: non-streaming answers of declared length (one pooled block, or
// a fresh one past the largest block) and chunked ones (several blocks) arrive whole in
// the response, over and over on the pooled responses and connections, and the node's
// buffer budget is all given back after each.
func TestDoReadsBodiesWhole(t *testing.T) {
	body := func(n int) []byte { return bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n] }
	answers := map[string][]byte{
		"/small": body(250), "/block": body(blockMin + 1), "/big": body(blockMax + 3),
		"/chunked": body(3*blockMin + 5), "/empty": {},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		name := "/" + strings.Split(string(ctx.Path()), "/")[2] // /v1/<name>/v1/chat/completions
		b := answers[name]
		ctx.SetContentType("application/json")
		if name == "/chunked" {
			ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
				for i := 0; i < len(b); i += 1000 {
					_, _ = w.Write(b[i:min(i+1000, len(b))])
					_ = w.Flush()
				}
			})
			return
		}
		ctx.SetBody(b)
	}}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	pool := NewPool(Config{})
	for name, want := range answers {
		snap := &snapshot.Snapshot{Content: snapshot.Content{
			Models: []snapshot.Model{{ID: "m"}},
			Routes: []snapshot.Route{{ID: "r", Model: "m", BaseURL: "http://" + ln.Addr().String() + "/v1" + name,
				Protocols: []string{snapshot.EndpointChat}, Country: "SE"}},
		}}
		x, err := index.Build(snap)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := x.Model("m")
		r := m.Routes[0]
		u := pool.For(r)
		for i := range 3 {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			u.Prepare(req, r, index.EPChat, []byte(`{}`), "", false)
			var call Call
			if err := u.Do(req, resp, false, time.Now().Add(10*time.Second), &call); err != nil {
				t.Fatalf("%s #%d: %v", name, i, err)
			}
			if got := resp.Body(); !bytes.Equal(got, want) {
				t.Fatalf("%s #%d: %d bytes, want %d", name, i, len(got), len(want))
			}
			call.Done()
			fasthttp.ReleaseRequest(req)
			fasthttp.ReleaseResponse(resp)
			if h := pool.buffered.held.Load(); h != 0 {
				t.Fatalf("%s #%d: %d budget bytes still held", name, i, h)
			}
		}
	}
}
