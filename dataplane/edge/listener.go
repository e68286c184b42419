package edge

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// ListenerConfig configures a Listener.
type ListenerConfig struct {
	// MaxConns caps the open connections in total (0: no cap). A connection over the cap is
	// answered 503 and closed at once.
	MaxConns int
	// MaxConnsPerAddr caps the open connections of one client address (an IPv4 address or
	// an IPv6 /64; 0: no cap). A connection over the cap is answered 429 and closed at once.
	// Peers in Trusted are exempt: a load balancer carries many clients.
	MaxConnsPerAddr int
	// Trusted are the proxies in front of the node (may be nil).
	Trusted *Proxies
	// WriteTimeout bounds every single write to a client (0: none): a client that stops
	// reading is cut once the socket's buffers are full and a write waits that long.
	WriteTimeout time.Duration
	// RefuseTotal and RefusePerAddr are the complete HTTP responses written to refused
	// connections (the interface's JSON error; may be nil: close without an answer).
	RefuseTotal, RefusePerAddr []byte
	// OnRefuse, when set, is told about each refused connection ("total" or "per_addr").
	OnRefuse func(reason string)
	Logger   *slog.Logger
}

// Listener wraps a net.Listener with the caps and deadlines of ListenerConfig.
type Listener struct {
	net.Listener
	cfg   ListenerConfig
	open  atomic.Int64
	perIP *Counter
}

// NewListener wraps ln.
func NewListener(ln net.Listener, cfg ListenerConfig) *Listener {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Listener{Listener: ln, cfg: cfg, perIP: NewCounter(cfg.MaxConnsPerAddr)}
}

// Open is the number of connections open now.
func (l *Listener) Open() int { return int(l.open.Load()) }

// Accept returns the next connection within the caps; connections over a cap are
// answered and closed here and never reach the server.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, counted := l.addrKey(c)
		if l.cfg.MaxConns > 0 && l.open.Load() >= int64(l.cfg.MaxConns) {
			l.refuse(c, l.cfg.RefuseTotal, "total")
			continue
		}
		if counted && l.cfg.MaxConnsPerAddr > 0 {
			if !l.perIP.Acquire(key) {
				l.refuse(c, l.cfg.RefusePerAddr, "per_addr")
				continue
			}
		} else {
			counted = false
		}
		l.open.Add(1)
		return &conn{Conn: c, l: l, key: key, counted: counted}, nil
	}
}

// addrKey is the per-address key of c's peer, and whether the peer is counted per address
// (trusted proxies and peers without an IP address are not).
func (l *Listener) addrKey(c net.Conn) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}, false
	}
	a := ap.Addr().Unmap()
	if l.cfg.Trusted.Trusted(a) {
		return netip.Addr{}, false
	}
	return AddrKey(a), true
}

func (l *Listener) refuse(c net.Conn, answer []byte, reason string) {
	if l.cfg.OnRefuse != nil {
		l.cfg.OnRefuse(reason)
	}
	l.cfg.Logger.Debug("connection refused", "reason", reason, "peer", c.RemoteAddr().String())
	if len(answer) > 0 {
		// A fresh socket's send buffer is empty: the write does not wait.
		_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = c.Write(answer)
	}
	_ = c.Close()
}

func (l *Listener) release(key netip.Addr, counted bool) {
	l.open.Add(-1)
	if !counted {
		return
	}
	l.perIP.Release(key)
}

// conn is an accepted connection: each Write gets its own deadline, Close releases its
// place under the caps once.
type conn struct {
	net.Conn
	// writeBy is the write deadline last set. Writes come from one goroutine at a time
	// (the connection's), so it needs no lock.
	writeBy time.Time
	l       *Listener
	key     netip.Addr
	counted bool
	closed  atomic.Bool
	linger  atomic.Bool
}

// Lingering on close: how long and how many unread bytes a connection closed with part of
// a request still unread is drained after its answer, so the client reads the answer
// instead of a reset.
const (
	lingerTime  = 500 * time.Millisecond
	lingerBytes = 9 << 20 // above the largest body limit: a client sending a refused body in full reads the answer
)

// Linger asks Close to send the answer's FIN first and drain what the client still sends,
// for at most lingerTime and lingerBytes, before closing. Use it when the connection is
// closed with part of a request body unread (a refusal before the body).
func (c *conn) Linger() { c.linger.Store(true) }

// Write writes p within the write timeout: the deadline is moved to now plus the timeout
// whenever less than half of it is left, so every write has between half the timeout and
// the whole of it, and a stream's many small writes do not each move a timer.
func (c *conn) Write(p []byte) (int, error) {
	if d := c.l.cfg.WriteTimeout; d > 0 {
		if now := time.Now(); c.writeBy.Sub(now) < d/2 {
			c.writeBy = now.Add(d)
			if err := c.Conn.SetWriteDeadline(c.writeBy); err != nil {
				return 0, err
			}
		}
	}
	return c.Conn.Write(p)
}

// SetWriteDeadline and SetDeadline set the socket's deadlines; the next Write sets its own
// again, as if none had been set.
func (c *conn) SetWriteDeadline(t time.Time) error {
	c.writeBy = time.Time{}
	return c.Conn.SetWriteDeadline(t)
}

func (c *conn) SetDeadline(t time.Time) error {
	c.writeBy = time.Time{}
	return c.Conn.SetDeadline(t)
}

func (c *conn) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return c.Conn.Close()
	}
	defer c.l.release(c.key, c.counted)
	if c.linger.Load() {
		if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
			_ = c.Conn.SetReadDeadline(time.Now().Add(lingerTime))
			_, _ = io.CopyN(io.Discard, c.Conn, lingerBytes)
		}
	}
	return c.Conn.Close()
}

var errNoSyscallConn = errors.New("edge: connection has no socket")

// SyscallConn exposes the socket (the server watches it for a client disconnect).
func (c *conn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errNoSyscallConn
}

// Response renders a complete HTTP/1.1 response that closes the connection, for answers
// written before any request is read.
func Response(status int, reason string, body []byte, extra ...string) []byte {
	b := []byte("HTTP/1.1 " + strconv.Itoa(status) + " " + reason + "\r\nContent-Type: application/json\r\nConnection: close\r\n")
	for i := 0; i+1 < len(extra); i += 2 {
		b = append(b, extra[i]+": "+extra[i+1]+"\r\n"...)
	}
	b = append(b, "Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"...)
	return append(b, body...)
}
