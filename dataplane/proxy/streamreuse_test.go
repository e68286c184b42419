package proxy

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
)

// TestStreamEndKeepsConnection: a stream that ended cleanly ([DONE], then the end of the
// body) returns its upstream connection to the pool, so the next stream does not dial
// again; one whose upstream held the body open after [DONE] is closed within
// drainWait.
func TestStreamEndKeepsConnection(t *testing.T) {
	var conns atomic.Int64
	var hold atomic.Bool
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{`{"choices":[{"delta":{"role":"assistant"}}]}`, `{"choices":[{"delta":{"content":"a"}}]}`, "[DONE]"} {
			w.Write([]byte("data: " + ev + "\n\n"))
			w.(http.Flusher).Flush()
		}
		if hold.Load() {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	defer close(release)
	pool := NewPool(Config{})
	r := testRoute(t, srv.URL, 0)
	u := pool.For(r)
	run := func() time.Duration {
		req := fasthttp.AcquireRequest()
		resp := fasthttp.AcquireResponse()
		defer fasthttp.ReleaseResponse(resp)
		defer fasthttp.ReleaseRequest(req)
		u.Prepare(req, r, index.EPChat, []byte(`{}`), "req_1", true)
		var c Call
		defer c.Done()
		if err := u.Do(req, resp, true, time.Time{}, &c); err != nil {
			t.Fatal(err)
		}
		st := OpenStream(resp, index.EPChat, StreamOptions{})
		for !st.Result.Ended {
			if _, err := st.Next(); err != nil {
				t.Fatal(err)
			}
		}
		t0 := time.Now()
		st.Close()
		return time.Since(t0)
	}
	for range 5 {
		run()
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("5 streams used %d upstream connections, want 1", n)
	}
	hold.Store(true)
	// The held body ends only when the test does: a Close within 5 s, however busy the
	// machine, gave up on it after drainWait.
	if took := run(); took > 5*time.Second {
		t.Fatalf("closing a stream whose upstream held its body open took %v", took)
	}
}
