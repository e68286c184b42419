package proxy

import (
	"net"
	"testing"
	"testing/synctest"
	"time"
)

// readConn answers every read with one byte and records the read deadlines set on it.
type readConn struct {
	net.Conn
	set []time.Time
}

func (c *readConn) Read(b []byte) (int, error)        { return copy(b, "x"), nil }
func (c *readConn) Write(b []byte) (int, error)       { return len(b), nil }
func (c *readConn) SetReadDeadline(t time.Time) error { c.set = append(c.set, t); return nil }
func (c *readConn) LocalAddr() net.Addr               { return &net.TCPAddr{} }

// TestReadDeadlineMovesLazily: the first read after a write waits for the first byte; later
// reads of the same answer move the idle deadline only once it lags a fresh one by more
// than a sixteenth of the idle timeout, and never past a deadline the HTTP client set.
func TestReadDeadlineMovesLazily(t *testing.T) {
	// In a bubble the clock moves only while the test sleeps: reads in a row stay within
	// idle/16 of each other however busy the machine.
	synctest.Test(t, func(t *testing.T) {
		const firstByte, idle = time.Second, 160 * time.Millisecond
		rc := &readConn{}
		c := newTimedConn(rc, firstByte, idle)
		read := func() {
			t.Helper()
			var b [1]byte
			if _, err := c.Read(b[:]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Write([]byte("request")); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		read()
		if len(rc.set) != 1 || rc.set[0].Sub(start) < firstByte-50*time.Millisecond {
			t.Fatalf("first read after a write: deadlines %v, want one a first-byte wait away", rc.set)
		}
		read() // the first idle read moves the deadline to the idle timeout
		for range 50 {
			read()
		}
		if len(rc.set) != 2 {
			t.Fatalf("51 reads in a row set %d idle deadlines, want 1", len(rc.set)-1)
		}
		time.Sleep(idle/16 + 20*time.Millisecond) // synctest's fake clock moves: no real wait
		read()
		if len(rc.set) != 3 {
			t.Fatalf("a read with the deadline lagging by more than idle/16 set none (%d set)", len(rc.set))
		}
		hard := time.Now().Add(idle / 4)
		if err := c.SetReadDeadline(hard); err != nil {
			t.Fatal(err)
		}
		read()
		if last := rc.set[len(rc.set)-1]; !last.Equal(hard) {
			t.Fatalf("a read after the client's own deadline set %v, want that deadline %v", last, hard)
		}
	})
}
