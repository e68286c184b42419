// Package proxy owns the exchange with upstream model servers: a pool of keep-alive fasthttp
// clients per upstream with their timeouts (pool.go), the request and its minimal body edits
// (request.go), the failure class of an exchange (classify.go), cancellation (call.go) and the
// reading of an upstream's event stream, each event checked and its usage bounded (stream.go).
package proxy

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/internal/flagenv"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Config configures a Pool. Zero fields take the defaults noted; routes may override the
// timeouts and MaxConns per upstream.
type Config struct {
	// MaxConnsPerUpstream bounds open connections to one upstream (route MaxConns
	// overrides); a request finding none free waits up to ConnectTimeout, then fails over.
	MaxConnsPerUpstream int `flag:"upstream-max-conns" default:"1024" help:"connections per upstream (a route's max_conns overrides)"`
	// ConnectTimeout bounds a TCP (and TLS) connect.
	ConnectTimeout time.Duration `flag:"upstream-connect-timeout" default:"5s" help:"upstream connect timeout (route connect_timeout_ms overrides)"`
	// FirstByteTimeout bounds the wait from request sent to the first response byte of a
	// streaming request. Non-streaming answers arrive whole when generation
	// ends, so their wait is bounded by TotalTimeout (and the request deadline) only.
	FirstByteTimeout time.Duration `flag:"upstream-first-byte-timeout" default:"60s" help:"wait for a stream's first response byte (route first_byte_timeout_ms overrides)"`
	// IdleTimeout is the longest silence between reads of a response (stream chunks).
	IdleTimeout time.Duration `flag:"upstream-idle-timeout" default:"60s" help:"longest silence between stream chunks (route idle_timeout_ms overrides)"`
	// TotalTimeout bounds the whole exchange, streams included.
	TotalTimeout time.Duration `flag:"upstream-total-timeout" default:"10m" help:"one upstream exchange, streams included (route total_timeout_ms overrides)"`
	// MaxIdleConnDuration closes pooled upstream connections idle this long: 4s, under
	// the 5 s keep-alive timeout of uvicorn (vLLM's server), so the gateway never writes a
	// request onto a connection the upstream is closing.
	MaxIdleConnDuration time.Duration `default:"4s"`
	// MaxResponseBodySize bounds buffered (non-streaming) upstream bodies.
	// They are read in blocks that never grow past it (bodyread.go); a longer answer fails
	// and its connection is closed.
	MaxResponseBodySize int `default:"67108864"`
	// MaxBufferedBytes bounds the bytes all non-streaming upstream bodies being read hold at
	// once on this node: a read that would pass it fails like a body over its limit, so
	// that many endless answers at once cannot take the node's memory (negative: no bound).
	MaxBufferedBytes int `flag:"upstream-buffer-budget" default:"67108864" help:"bytes all buffered upstream answers may hold at once; past it one fails 502 (negative: off)"`
	// UserAgent is sent upstream.
	UserAgent string `default:"sekgate-gateway"`
	// Getenv resolves "env:NAME" credential references; default os.Getenv.
	Getenv func(string) string
}

// fill sets the defaults of the fields left zero (their default tags; the flags of the
// dataplane command are the same fields). A zero or negative timeout or size is taken as
// unset, as it always was.
func (c *Config) fill() {
	for _, d := range []*time.Duration{&c.ConnectTimeout, &c.FirstByteTimeout, &c.IdleTimeout, &c.TotalTimeout, &c.MaxIdleConnDuration} {
		*d = max(*d, 0)
	}
	c.MaxConnsPerUpstream, c.MaxResponseBodySize = max(c.MaxConnsPerUpstream, 0), max(c.MaxResponseBodySize, 0)
	flagenv.MustDefaults(c)
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
}

// Pool hands out one Upstream per distinct upstream configuration, shared across snapshots
// so connection pools survive snapshot swaps.
type Pool struct {
	cfg Config
	// mu guards m; the request path finds a route's Upstream in its UpstreamMemo.
	mu sync.Mutex
	m  map[upstreamKey]*Upstream
	// gen counts Refresh calls; an Upstream of an older generation is rebuilt.
	gen atomic.Uint64
	// buffered is the node's budget for non-streaming bodies being read.
	buffered bodyBudget
}

// NewPool returns a Pool.
func NewPool(cfg Config) *Pool {
	cfg.fill()
	return &Pool{cfg: cfg, m: make(map[upstreamKey]*Upstream), buffered: bodyBudget{max: int64(max(cfg.MaxBufferedBytes, 0))}}
}

type upstreamKey struct {
	tls                      bool
	addr, host, credentials  string
	serverName               string // TLS server name when the address is an IP (replicas)
	maxConns                 int
	connect, firstByte, idle int
	total                    int
}

// Upstream is a pooled client for one upstream server.
type Upstream struct {
	pool      *Pool
	hc        *fasthttp.HostClient
	host      string
	auth      string // "Bearer <credential>" or ""
	apiKey    string // the credential alone, for Messages-style upstreams' x-api-key
	userAgent string
	firstByte time.Duration
	total     time.Duration
	// credentialErr is set when the route's credential reference cannot be resolved.
	credentialErr error
	gen           uint64 // the pool's generation it was built in (Refresh)
}

// Refresh makes the pool resolve every route's credential again on its next request (after
// the node's credentials changed): upstreams built before are replaced as routes next use
// them; their open connections close when idle.
func (p *Pool) Refresh() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen.Add(1)
	clear(p.m)
}

// ErrCredentials means a route's credential reference could not be resolved on this node.
var ErrCredentials = errors.New("proxy: upstream credential unavailable")

// For returns the Upstream serving route r.
func (p *Pool) For(r *index.Route) *Upstream {
	gen := p.gen.Load()
	if u, ok := r.UpstreamMemo.Load().(*Upstream); ok && u.pool == p && u.gen == gen {
		return u
	}
	k := upstreamKey{
		tls: r.UpstreamTLS, addr: r.UpstreamAddr, host: r.UpstreamHost, credentials: r.CredentialsRef, serverName: r.ServerName,
		maxConns: r.MaxConns, connect: r.ConnectTimeoutMS, firstByte: r.FirstByteTimeoutMS,
		idle: r.IdleTimeoutMS, total: r.TotalTimeoutMS,
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	u := p.m[k]
	if u == nil || u.gen != gen {
		u = p.newUpstream(k)
		u.gen = gen
		p.m[k] = u
	}
	r.UpstreamMemo.Store(u)
	return u
}

func ms(v int, def time.Duration) time.Duration {
	if v > 0 {
		return time.Duration(v) * time.Millisecond
	}
	return def
}

func (p *Pool) newUpstream(k upstreamKey) *Upstream {
	maxConns := k.maxConns
	if maxConns <= 0 {
		maxConns = p.cfg.MaxConnsPerUpstream
	}
	connect := ms(k.connect, p.cfg.ConnectTimeout)
	firstByte := ms(k.firstByte, p.cfg.FirstByteTimeout)
	idle := ms(k.idle, p.cfg.IdleTimeout)
	u := &Upstream{pool: p, host: k.host, userAgent: p.cfg.UserAgent, firstByte: firstByte, total: ms(k.total, p.cfg.TotalTimeout)}
	// Only env:GATEWAY_CREDENTIAL_* is read (snapshot.ParseCredentialsRef), so a route
	// cannot point the node at its own secrets; the snapshot was validated the same way.
	switch name, err := snapshot.ParseCredentialsRef(k.credentials); {
	case err != nil:
		u.credentialErr = ErrCredentials
	case name == "":
	default:
		if v := p.cfg.Getenv(name); v != "" {
			u.auth, u.apiKey = "Bearer "+v, v
		} else {
			u.credentialErr = ErrCredentials
		}
	}
	u.hc = &fasthttp.HostClient{
		Addr:                          k.addr,
		IsTLS:                         k.tls,
		Name:                          p.cfg.UserAgent,
		MaxConns:                      maxConns,
		MaxIdleConnDuration:           p.cfg.MaxIdleConnDuration,
		MaxResponseBodySize:           p.cfg.MaxResponseBodySize,
		WriteTimeout:                  connect + firstByte,
		ReadBufferSize:                16 << 10,
		WriteBufferSize:               16 << 10,
		MaxIdemponentCallAttempts:     1, // inference is not idempotent: never resend
		DisableHeaderNamesNormalizing: false,
		DisablePathNormalizing:        true,
		MaxConnWaitTimeout:            connect,
		DialTimeout: func(addr string, timeout time.Duration) (net.Conn, error) {
			if timeout <= 0 || timeout > connect {
				timeout = connect
			}
			c, err := fasthttp.DialTimeout(addr, timeout)
			if err != nil {
				return nil, &DialError{Err: err}
			}
			return newTimedConn(c, firstByte, idle), nil
		},
	}
	if k.tls && k.serverName != "" {
		// A replica is dialled by IP; its certificate names the service.
		u.hc.TLSConfig = &tls.Config{ServerName: k.serverName, MinVersion: tls.VersionTLS12}
	}
	return u
}

// DialError marks a failure to connect to the upstream.
type DialError struct{ Err error }

func (e *DialError) Error() string { return "dial upstream: " + e.Err.Error() }
func (e *DialError) Unwrap() error { return e.Err }

// timedConn applies the first-byte timeout to the first read after a write (the wait for
// the response) and the idle timeout to every later read, capped by any deadline the HTTP
// client set itself. fasthttp uses a connection from one goroutine at a time; the fields
// under mu are shared with a Call cancelling from another goroutine.
type timedConn struct {
	net.Conn
	firstByte, idle time.Duration
	hard            time.Time
	wrote           bool
	// readBy is the read deadline in force (set by Read or from outside). Between reads
	// of one answer (a stream's events) Read moves it only once it lags a fresh one by
	// more than idle/16, so that every event does not move a timer: each wait then has
	// between 15/16 of the idle timeout and all of it. Only the goroutine reading the
	// connection touches it.
	readBy time.Time
	laddr  *connAddr

	mu           sync.Mutex
	owner        *Call         // exchange currently using the connection
	reqFirstByte time.Duration // the owner's first-byte wait (0: firstByte)
	cancelled    atomic.Bool   // the owner cancelled: reads fail at once
}

func newTimedConn(c net.Conn, firstByte, idle time.Duration) *timedConn {
	tc := &timedConn{Conn: c, firstByte: firstByte, idle: idle}
	tc.laddr = &connAddr{Addr: c.LocalAddr(), c: tc}
	return tc
}

// LocalAddr returns the local address with the connection attached (see Call).
func (c *timedConn) LocalAddr() net.Addr { return c.laddr }

func (c *timedConn) Write(b []byte) (int, error) {
	c.wrote = true
	return c.Conn.Write(b)
}

func (c *timedConn) SetReadDeadline(t time.Time) error {
	c.hard, c.readBy = t, t
	return c.Conn.SetReadDeadline(t)
}

func (c *timedConn) SetDeadline(t time.Time) error {
	c.hard, c.readBy = t, t
	return c.Conn.SetDeadline(t)
}

func (c *timedConn) Read(b []byte) (int, error) {
	if c.cancelled.Load() {
		return 0, ErrCancelled
	}
	d, first := c.idle, c.wrote
	if first {
		d, c.wrote = c.firstByte, false
		c.mu.Lock()
		if c.reqFirstByte > 0 {
			d = c.reqFirstByte
		}
		c.mu.Unlock()
	}
	dl := time.Now().Add(d)
	if !c.hard.IsZero() && c.hard.Before(dl) {
		dl = c.hard
	}
	if first || c.readBy.IsZero() || c.readBy.After(dl) || dl.Sub(c.readBy) > c.idle/16 {
		if err := c.Conn.SetReadDeadline(dl); err != nil {
			return 0, err
		}
		c.readBy = dl
	}
	// A Cancel between the check above and here has set a past deadline after ours; one
	// before it is seen here.
	if c.cancelled.Load() {
		return 0, ErrCancelled
	}
	n, err := c.Conn.Read(b)
	if err != nil && c.cancelled.Load() {
		err = ErrCancelled
	}
	return n, err
}

// SetDialForTest makes the upstream of route r dial with dial (benchmarks and tests that
// use in-memory listeners).
func (p *Pool) SetDialForTest(r *index.Route, dial func(addr string) (net.Conn, error)) {
	u := p.For(r)
	u.hc.DialTimeout = nil
	u.hc.Dial = func(addr string) (net.Conn, error) {
		c, err := dial(addr)
		if err != nil {
			return nil, &DialError{Err: err}
		}
		return c, nil
	}
}
