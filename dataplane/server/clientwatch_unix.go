//go:build unix

package server

import (
	"errors"
	"net"
	"os"
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
type clientWatch struct {
	conn   net.Conn
	done   chan struct{}
	active bool
}

var aLongTimeAgo = time.Unix(1, 0)

// start watches c on behalf of call. It does nothing when c has no socket.
func (w *clientWatch) start(c net.Conn, call *proxy.Call) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	// The server's read deadline for this request may be near; the watch runs until stop.
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return
	}
	if w.done == nil {
		w.done = make(chan struct{}, 1)
	}
	w.conn, w.active = c, true
	go watchSocket(rc, call, w.done)
}

func watchSocket(rc syscall.RawConn, call *proxy.Call, done chan<- struct{}) {
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
	done <- struct{}{}
}

// stop ends the watch and waits for it, so nothing touches the connection afterwards.
func (w *clientWatch) stop() {
	if !w.active {
		return
	}
	_ = w.conn.SetReadDeadline(aLongTimeAgo)
	<-w.done
	w.conn, w.active = nil, false
}
