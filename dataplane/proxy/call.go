package proxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// ErrCancelled is the error of an exchange aborted by Call.Cancel (the client went away).
var ErrCancelled = errors.New("proxy: exchange cancelled")

// Call controls one upstream exchange while it runs: another goroutine (the edge's client
// watcher) can Cancel it at any time, and the upstream connection is interrupted at once,
// whether the exchange is waiting for the response headers, reading a buffered body or
// relaying a stream. Closing the connection is what tells the upstream server to stop
// generating.
//
// fasthttp has no per-request context, so the connection is found this way: the request
// body is handed to fasthttp as a writer-to stream; when fasthttp writes it (on the calling
// goroutine, after choosing a pooled connection and recording its local address in the
// response) the Call reads that address, which for upstream connections carries the
// connection itself, and attaches to it until Done.
//
// A Call is reusable after Done; the zero value is ready.
type Call struct {
	mu       sync.Mutex
	canceled bool
	conn     *timedConn
	// firstByte is this exchange's wait for the first response byte (0: the upstream's).
	firstByte time.Duration
	hook      bodyHook
}

// Cancel aborts the exchange: a blocked upstream read returns at once, later ones fail, and
// Do returns ErrCancelled if it has not started yet. Safe to call from any goroutine and
// more than once.
func (c *Call) Cancel() {
	c.mu.Lock()
	c.canceled = true
	conn := c.conn
	c.mu.Unlock()
	if conn != nil {
		conn.interrupt(c)
	}
}

// Cancelled reports whether Cancel was called since the last Done.
func (c *Call) Cancelled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.canceled
}

// Done detaches the Call from its connection and resets it for reuse. Call it once the
// exchange is over (response released or stream closed) and no Cancel can come any more.
func (c *Call) Done() {
	c.mu.Lock()
	conn := c.conn
	c.conn = nil
	c.canceled = false
	c.firstByte = 0
	c.mu.Unlock()
	if conn != nil {
		conn.release(c)
	}
	c.hook = bodyHook{}
}

// attach binds c to conn for the rest of the exchange.
func (c *Call) attach(conn *timedConn) {
	conn.claim(c, c.firstByte)
	c.mu.Lock()
	c.conn = conn
	canceled := c.canceled
	c.mu.Unlock()
	if canceled {
		conn.interrupt(c)
	}
}

// bodyHook is the request body as fasthttp sees it: a stream of known size that fasthttp
// copies with WriteTo on the calling goroutine once a connection is chosen.
type bodyHook struct {
	call *Call
	resp *fasthttp.Response
	body []byte
}

func (h *bodyHook) Read(p []byte) (int, error) {
	// fasthttp uses WriteTo; Read serves any other copier.
	h.attach()
	if len(h.body) == 0 {
		return 0, io.EOF
	}
	n := copy(p, h.body)
	h.body = h.body[n:]
	return n, nil
}

func (h *bodyHook) WriteTo(w io.Writer) (int64, error) {
	h.attach()
	n, err := w.Write(h.body)
	h.body = h.body[n:]
	return int64(n), err
}

func (h *bodyHook) attach() {
	if h.call == nil || h.resp == nil {
		return
	}
	if a, ok := h.resp.LocalAddr().(*connAddr); ok {
		h.call.attach(a.c)
	}
	h.resp = nil
}

// connAddr is the local address of an upstream connection; it carries the connection so a
// Call can find it from fasthttp's Response.LocalAddr.
type connAddr struct {
	net.Addr
	c *timedConn
}

// aLongTimeAgo is a deadline in the past: it makes blocked reads return at once.
var aLongTimeAgo = time.Unix(1, 0)

// interrupt aborts the current exchange on c if owner still owns it.
func (c *timedConn) interrupt(owner *Call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owner != owner {
		return
	}
	c.cancelled.Store(true)
	_ = c.Conn.SetReadDeadline(aLongTimeAgo)
}

// claim makes owner the connection's exchange: a cancel left over from an earlier exchange
// on this pooled connection is cleared.
func (c *timedConn) claim(owner *Call, firstByte time.Duration) {
	c.mu.Lock()
	c.owner = owner
	c.reqFirstByte = firstByte
	c.cancelled.Store(false)
	c.mu.Unlock()
}

func (c *timedConn) release(owner *Call) {
	c.mu.Lock()
	if c.owner == owner {
		c.owner = nil
	}
	c.mu.Unlock()
}
