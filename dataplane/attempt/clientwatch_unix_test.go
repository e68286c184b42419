//go:build unix

package attempt

import (
	"net"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/internal/poll"
)

// tcpPair returns the two ends of a loopback TCP connection: the server's and the client's.
func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// TestClientWatchDelay: a watch cancels the exchange of a client that left only once its
// delay has passed; stopped before then it never touched the connection (the server can
// still read what the client sent), and a client still there is never cancelled.
func TestClientWatchDelay(t *testing.T) {
	cases := []struct {
		name string
		// The watch's delay; how long the exchange lasts at most: it ends at once when
		// cancelled, so an exchange meant to be cancelled gets all the time a busy
		// machine may need.
		delay, before time.Duration
		clientLeaves  bool
		wantCancelled bool
	}{
		{"client left, watched at once", 0, 10 * time.Second, true, true},
		{"client left, watched after the delay", 20 * time.Millisecond, 10 * time.Second, true, true},
		{"client left, answered within the delay", time.Hour, 50 * time.Millisecond, true, false},
		{"client stays, watched", 0, 50 * time.Millisecond, false, false},
		{"client stays, answered within the delay", time.Hour, 10 * time.Millisecond, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, cli := tcpPair(t)
			var call proxy.Call
			var w clientWatch
			w.start(srv, &call, c.delay)
			if c.clientLeaves {
				cli.Close()
			} else if _, err := cli.Write([]byte("x")); err != nil { // a pipelined byte
				t.Fatal(err)
			}
			poll.Wait(c.before, call.Cancelled)
			w.stop()
			if got := call.Cancelled(); got != c.wantCancelled {
				t.Fatalf("cancelled %v, want %v", got, c.wantCancelled)
			}
			if !c.clientLeaves { // the watch peeked, never consumed, and left no deadline behind
				if err := srv.SetReadDeadline(time.Now().Add(time.Second)); err != nil {
					t.Fatal(err)
				}
				var b [1]byte
				if n, err := srv.Read(b[:]); n != 1 || b[0] != 'x' {
					t.Fatalf("server read %d %q %v", n, b[:n], err)
				}
			}
		})
	}
}

// TestClientWatchStopRacesFire: a pooled watch started and stopped again and again, with
// the stop landing before, during and after the timer fires, never hangs, never cancels a
// client that is still there, and leaves the connection readable every time.
func TestClientWatchStopRacesFire(t *testing.T) {
	srv, cli := tcpPair(t)
	var call proxy.Call
	var w clientWatch
	for i := range 300 {
		delay := time.Duration(i%7) * 100 * time.Microsecond
		w.start(srv, &call, delay)
		// A real sleep: the race of a stop with the timer firing on the real clock is
		// the subject.
		time.Sleep(time.Duration(i%5) * 100 * time.Microsecond)
		w.stop()
		if call.Cancelled() {
			t.Fatalf("round %d: a client still connected was cancelled", i)
		}
	}
	if _, err := cli.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetReadDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	if n, err := srv.Read(b[:]); n != 1 || b[0] != 'y' {
		t.Fatalf("server read %d %q %v", n, b[:n], err)
	}
}
