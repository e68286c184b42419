package edge

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ListenerConfig configures a Listener.
type ListenerConfig struct {
	// MaxConns caps the open connections in total (0: no cap). A connection over the cap is
	// answered 503 and closed at once.
	MaxConns int
	// MaxConnsPerAddr caps the connections of one client address (an IPv4 address or an
	// IPv6 /64; 0: no cap) that have not yet presented a valid key: strangers. A connection
	// on which a request authenticated (Authenticate) no longer counts here but against its
	// account (MaxConnsPerAccount), whose request limits then apply. A stranger over the cap
	// waits, unread, up to AddrWait for a place (another stranger of its address
	// authenticating or closing); past that, or when MaxWaitingPerAddr already wait, it is
	// answered 429 and closed. Peers in Trusted are exempt: a load balancer carries many
	// clients.
	MaxConnsPerAddr int
	// AddrWait is how long a stranger over MaxConnsPerAddr waits for a place (0: not at all,
	// refused at once).
	AddrWait time.Duration
	// MaxWaitingPerAddr caps the strangers of one address waiting for a place (0: none wait).
	MaxWaitingPerAddr int
	// MaxConnsPerAccount caps the authenticated connections of one account (0: no cap); a
	// connection over it stays a stranger of its address.
	MaxConnsPerAccount int
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

// Listener wraps a net.Listener with the caps and deadlines of ListenerConfig. Accepting
// runs on its own goroutine (started by the first Accept), so that a connection waiting for
// a place of its address never holds up another address's.
type Listener struct {
	net.Listener
	cfg  ListenerConfig
	open atomic.Int64

	mu       sync.Mutex
	addrs    map[netip.Addr]*addrState
	accounts map[string]int

	start  sync.Once
	ready  chan *conn
	errc   chan error
	done   chan struct{}
	closed sync.Once
}

// addrState is one client address's strangers and the connections waiting for a place.
type addrState struct {
	strangers int
	queue     []*conn
}

// NewListener wraps ln.
func NewListener(ln net.Listener, cfg ListenerConfig) *Listener {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Listener{
		Listener: ln, cfg: cfg,
		addrs: map[netip.Addr]*addrState{}, accounts: map[string]int{},
		ready: make(chan *conn), errc: make(chan error), done: make(chan struct{}),
	}
}

// Open is the number of connections open now (waiting ones included).
func (l *Listener) Open() int { return int(l.open.Load()) }

// Accept returns the next connection within the caps; connections over a cap are
// answered and closed by the listener and never reach the server.
func (l *Listener) Accept() (net.Conn, error) {
	l.start.Do(func() { go l.acceptLoop() })
	select {
	case c := <-l.ready:
		return c, nil
	case err := <-l.errc:
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close closes the underlying listener and stops accepting.
func (l *Listener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return l.Listener.Close()
}

func (l *Listener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			select {
			case l.errc <- err:
			case <-l.done:
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		l.admit(c)
	}
}

// admit applies the caps to a new connection: it is handed to Accept, queued for a place
// of its address, or refused.
func (l *Listener) admit(c net.Conn) {
	key, counted := l.addrKey(c)
	if l.cfg.MaxConns > 0 && l.open.Load() >= int64(l.cfg.MaxConns) {
		l.refuse(c, l.cfg.RefuseTotal, "total")
		return
	}
	cn := &conn{Conn: c, l: l, key: key}
	if !counted || l.cfg.MaxConnsPerAddr <= 0 {
		l.open.Add(1)
		l.deliver(cn)
		return
	}
	l.mu.Lock()
	st := l.addrs[key]
	if st == nil {
		st = &addrState{}
		l.addrs[key] = st
	}
	if st.strangers < l.cfg.MaxConnsPerAddr {
		st.strangers++
		cn.stranger = true
		l.mu.Unlock()
		l.open.Add(1)
		l.deliver(cn)
		return
	}
	if l.cfg.AddrWait <= 0 || len(st.queue) >= l.cfg.MaxWaitingPerAddr {
		l.mu.Unlock()
		l.refuse(c, l.cfg.RefusePerAddr, "per_addr")
		return
	}
	st.queue = append(st.queue, cn)
	l.open.Add(1)
	cn.timer = time.AfterFunc(l.cfg.AddrWait, func() { l.expire(cn) })
	l.mu.Unlock()
}

// deliver hands c to Accept (or closes it when the listener closed first).
func (l *Listener) deliver(c *conn) {
	select {
	case l.ready <- c:
	case <-l.done:
		_ = c.Close()
	}
}

// expire refuses a queued connection whose wait ran out (unless it got a place meanwhile).
func (l *Listener) expire(c *conn) {
	l.mu.Lock()
	st := l.addrs[c.key]
	found := false
	if st != nil {
		for i, q := range st.queue {
			if q == c {
				st.queue = append(st.queue[:i], st.queue[i+1:]...)
				found = true
				break
			}
		}
		l.dropIfEmpty(c.key, st)
	}
	l.mu.Unlock()
	if !found {
		return
	}
	l.open.Add(-1)
	c.closed.Store(true)
	l.refuse(c.Conn, l.cfg.RefusePerAddr, "per_addr")
}

// releaseStrangerLocked gives back a stranger's place of key: the first connection waiting
// for one takes it over. l.mu is held.
func (l *Listener) releaseStrangerLocked(key netip.Addr) {
	st := l.addrs[key]
	if st == nil {
		return
	}
	if len(st.queue) > 0 {
		next := st.queue[0]
		st.queue[0] = nil
		st.queue = st.queue[1:]
		next.timer.Stop()
		next.stranger = true
		go l.deliver(next)
		return
	}
	st.strangers--
	l.dropIfEmpty(key, st)
}

func (l *Listener) dropIfEmpty(key netip.Addr, st *addrState) {
	if st.strangers <= 0 && len(st.queue) == 0 {
		delete(l.addrs, key)
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

// authenticate moves c from its address's strangers to account's connections, unless the
// account is at its cap.
func (l *Listener) authenticate(c *conn, account string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.account != "" {
		return
	}
	if l.cfg.MaxConnsPerAccount > 0 && l.accounts[account] >= l.cfg.MaxConnsPerAccount {
		return
	}
	l.accounts[account]++
	c.account = account
	c.authed.Store(true)
	if c.stranger {
		c.stranger = false
		l.releaseStrangerLocked(c.key)
	}
}

func (l *Listener) release(c *conn) {
	l.open.Add(-1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.stranger {
		c.stranger = false
		l.releaseStrangerLocked(c.key)
	}
	if c.account != "" {
		if n := l.accounts[c.account] - 1; n > 0 {
			l.accounts[c.account] = n
		} else {
			delete(l.accounts, c.account)
		}
	}
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
	closed  atomic.Bool
	linger  atomic.Bool
	authed  atomic.Bool
	// stranger, account and timer are guarded by l.mu.
	stranger bool        // counted among its address's strangers
	account  string      // counted among this account's connections
	timer    *time.Timer // the wait for a place (queued connections)
}

// Authenticate tells the listener that a request on c presented a valid key of account: c
// stops counting against its address's cap and counts against the account's.
func (c *conn) Authenticate(account string) {
	if c.authed.Load() || c.l == nil {
		return
	}
	c.l.authenticate(c, account)
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
	defer c.l.release(c)
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
