//go:build unix

package attempt

import (
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/sekgate/gateway/dataplane/proxy"
)

// clientWatch notices a client closing its connection while the gateway waits on the
// upstream or relays a stream, and cancels the upstream exchange at once instead of at the
// next write to the client.
//
// fasthttp reads nothing from a connection while its handler (or a response body writer)
// runs, so the watch polls the socket for readability and peeks (MSG_PEEK) without
// consuming: a read of zero bytes or a reset means the client is gone; pending bytes (a
// pipelined request) end the watch without cancelling. Stopping sets a past read deadline,
// which fasthttp replaces before it reads the next request. Connections that expose no
// socket (TLS terminated in process, in-memory listeners) are not watched; their
// disconnects are still noticed at the next write.
//
// The watch begins only after a delay: a goroutine parked on the socket, its deadline and
// its wake-ups cost about as much CPU as the rest of a short request's routing, and a
// client that leaves a request answered within the delay costs the upstream nothing worth
// cancelling. A timer armed and stopped in time costs no goroutine at all.
//
// A clientWatch lives in a pooled exchange and is reused: stop returns only when the
// timer's function cannot run any more or has finished.
type clientWatch struct {
	armed bool        // start armed the timer; stop has not run yet
	st    *watchState // made by the first start; kept when the exchange is reset
}

// watchState is what a watch shares with its timer's goroutine.
type watchState struct {
	timer *time.Timer // runs fire

	mu      sync.Mutex // orders fire and stop
	conn    net.Conn
	call    *proxy.Call
	stopped bool          // stop ran: fire must not touch the connection
	running bool          // fire is watching the socket
	fin     chan struct{} // one send per run of fire
}

var aLongTimeAgo = time.Unix(1, 0)

// start watches c on behalf of call once delay has passed (at once when delay is 0).
func (w *clientWatch) start(c net.Conn, call *proxy.Call, delay time.Duration) {
	if _, ok := c.(syscall.Conn); !ok {
		return
	}
	st := w.st
	if st == nil {
		st = &watchState{fin: make(chan struct{}, 1)}
		w.st = st
	}
	st.mu.Lock()
	st.conn, st.call, st.stopped, st.running = c, call, false, false
	st.mu.Unlock()
	w.armed = true
	if st.timer == nil {
		st.timer = time.AfterFunc(delay, st.fire)
	} else {
		st.timer.Reset(delay)
	}
}

// fire runs on the timer's goroutine: it watches the socket until the client leaves or
// stop sets a past read deadline.
func (w *watchState) fire() {
	defer func() { w.fin <- struct{}{} }()
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	c, call := w.conn, w.call
	rc, err := c.(syscall.Conn).SyscallConn()
	// The server's read deadline for this request may be near; the watch runs until stop.
	if err == nil {
		err = c.SetReadDeadline(time.Time{})
	}
	w.running = err == nil
	w.mu.Unlock()
	if err == nil {
		watchSocket(rc, call)
	}
}

func watchSocket(rc syscall.RawConn, call *proxy.Call) {
	var buf [1]byte
	gone := false
	err := rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK || err == syscall.EINTR:
			return false // wait for readability (or the deadline stop sets)
		case err != nil || n == 0:
			gone = true // reset, or an orderly close
		}
		return true
	})
	// An error other than the deadline stop sets means the server closed the connection
	// (e.g. a write to a client that stopped reading timed out): the client is gone too.
	if gone || (err != nil && !errors.Is(err, os.ErrDeadlineExceeded)) {
		call.Cancel()
	}
}

// stop ends the watch and waits for it, so nothing touches the connection afterwards.
func (w *clientWatch) stop() {
	if !w.armed {
		return
	}
	w.armed = false
	st := w.st
	if st.timer.Stop() {
		st.conn, st.call = nil, nil
		return // fire never ran and never will
	}
	st.mu.Lock()
	st.stopped = true
	if st.running {
		_ = st.conn.SetReadDeadline(aLongTimeAgo)
	}
	st.mu.Unlock()
	<-st.fin
	st.conn, st.call = nil, nil
}
