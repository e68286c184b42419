package proxy

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/shared/snapshot"
)

// slowServer answers after the delay in ms named by the body (e.g. "300"), counting the
// requests whose client went away first.
type slowServer struct {
	*httptest.Server
	cancelled, served atomic.Int64
}

func newSlowServer(t *testing.T) *slowServer {
	s := &slowServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf [16]byte
		n, _ := r.Body.Read(buf[:])
		ms, _ := strconv.Atoi(string(buf[:n]))
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"ok":true}`))
			s.served.Add(1)
		case <-r.Context().Done():
			s.cancelled.Add(1)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func testRoute(t *testing.T, base string, firstByteMS int) *index.Route {
	t.Helper()
	snap := &snapshot.Snapshot{Content: snapshot.Content{
		Models: []snapshot.Model{{ID: "m"}},
		Routes: []snapshot.Route{{ID: "r", Model: "m", BaseURL: base + "/v1", Protocols: []string{snapshot.EndpointChat},
			Country: "SE", FirstByteTimeoutMS: firstByteMS}},
	}}
	x, err := index.Build(snap)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := x.Model("m")
	return m.Routes[0]
}

func call(u *Upstream, r *index.Route, c *Call, delayMS int, stream bool) (int, error) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	u.Prepare(req, r, index.EPChat, []byte(strconv.Itoa(delayMS)), "req_1", stream)
	err := u.Do(req, resp, stream, time.Time{}, c)
	fasthttp.ReleaseRequest(req)
	if stream && err == nil {
		_ = resp.CloseBodyStream()
	}
	return resp.StatusCode(), err
}

func TestCallCancelWhileWaiting(t *testing.T) {
	srv := newSlowServer(t)
	pool := NewPool(Config{})
	r := testRoute(t, srv.URL, 0)
	u := pool.For(r)
	var c Call
	time.AfterFunc(100*time.Millisecond, c.Cancel)
	t0 := time.Now()
	_, err := call(u, r, &c, 5000, false)
	if !errors.Is(err, ErrCancelled) || Classify(err) != FailCancelled {
		t.Fatalf("err %v", err)
	}
	// The upstream waits 5 s: an answer within 4 s, however busy the machine, was cut short.
	if took := time.Since(t0); took > 4*time.Second {
		t.Fatalf("cancel took %v", took)
	}
	c.Done()
	poll.Until(t, 10*time.Second, "the upstream to see the cancellation", func() bool { return srv.cancelled.Load() == 1 })
	// Cancelled before the exchange: nothing is sent.
	c.Cancel()
	if _, err := call(u, r, &c, 0, false); !errors.Is(err, ErrCancelled) {
		t.Fatalf("pre-cancelled: %v", err)
	}
	c.Done()
}

// TestStaleCancelDoesNotPoisonPooledConn: a Cancel arriving after its exchange ended must
// not break the next exchange on the same pooled connection.
func TestStaleCancelDoesNotPoisonPooledConn(t *testing.T) {
	srv := newSlowServer(t)
	pool := NewPool(Config{MaxConnsPerUpstream: 1}) // one connection: reuse is certain
	r := testRoute(t, srv.URL, 0)
	u := pool.For(r)
	for i := range 20 {
		var a, b Call
		if st, err := call(u, r, &a, 0, false); err != nil || st != 200 {
			t.Fatalf("round %d: a %d %v", i, st, err)
		}
		stale := &a
		if i%2 == 0 {
			stale.Done() // detached first, then a late cancel
		}
		stale.Cancel()
		if st, err := call(u, r, &b, 0, false); err != nil || st != 200 {
			t.Fatalf("round %d: b after a stale cancel: %d %v", i, st, err)
		}
		b.Done()
		a.Done()
	}
	if srv.cancelled.Load() != 0 {
		t.Fatalf("%d cancellations", srv.cancelled.Load())
	}
}

// TestFirstByteTimeout: the first-byte timeout bounds a stream's wait for its headers; a
// non-streaming answer may take longer (it arrives whole when generation ends).
func TestFirstByteTimeout(t *testing.T) {
	srv := newSlowServer(t)
	pool := NewPool(Config{})
	r := testRoute(t, srv.URL, 150)
	u := pool.For(r)
	var c Call
	t0 := time.Now()
	if _, err := call(u, r, &c, 5000, true); Classify(err) != FailTimeout {
		t.Fatalf("stream: %v", err)
	}
	// The upstream waits 5 s: an answer within 4 s, however busy the machine, was the timeout.
	if took := time.Since(t0); took > 4*time.Second {
		t.Fatalf("stream waited %v", took)
	}
	c.Done()
	if st, err := call(u, r, &c, 400, false); err != nil || st != 200 {
		t.Fatalf("non-streaming: %d %v", st, err)
	}
	c.Done()
}
