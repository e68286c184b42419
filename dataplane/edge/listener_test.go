package edge

import (
	"net"
	"testing"
	"testing/synctest"
	"time"
)

// deadlineConn records the write deadlines set on it.
type deadlineConn struct {
	net.Conn
	set []time.Time
}

func (c *deadlineConn) Write(p []byte) (int, error)        { return len(p), nil }
func (c *deadlineConn) SetWriteDeadline(t time.Time) error { c.set = append(c.set, t); return nil }
func (c *deadlineConn) SetDeadline(t time.Time) error      { c.set = append(c.set, t); return nil }

// TestWriteDeadlineMovesLazily: a write sets the deadline to now plus the timeout only when
// less than half of it is left, so every write has between half the timeout and all of it;
// a deadline set from outside is replaced at the next write, as before.
func TestWriteDeadlineMovesLazily(t *testing.T) {
	// In a bubble the clock moves only while the test sleeps: writes in a row stay within
	// half the timeout of each other however busy the machine.
	synctest.Test(t, func(t *testing.T) {
		const d = 200 * time.Millisecond
		fc := &deadlineConn{}
		c := &conn{Conn: fc, l: &Listener{cfg: ListenerConfig{WriteTimeout: d}}}
		write := func() {
			t.Helper()
			before := time.Now()
			if _, err := c.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			if left := c.writeBy.Sub(before); left < d/2 || left > d+50*time.Millisecond {
				t.Fatalf("a write got %v of its %v timeout", left, d)
			}
		}
		for range 20 {
			write()
		}
		if len(fc.set) != 1 {
			t.Fatalf("20 writes in a row set %d deadlines, want 1", len(fc.set))
		}
		time.Sleep(d/2 + 20*time.Millisecond) // synctest's fake clock moves: no real wait
		write()
		if len(fc.set) != 2 {
			t.Fatalf("a write with less than half the timeout left set no deadline (%d set)", len(fc.set))
		}
		if err := c.SetWriteDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
		write()
		if len(fc.set) != 4 || fc.set[3].IsZero() {
			t.Fatalf("a write after an outside deadline did not set its own: %v", fc.set)
		}
	})
}
