// Package server is the data plane's public HTTP edge: fasthttp with fasthttp/router,
// request IDs, request bodies, the JSON error envelope, model reads and the account paths
// it forwards to the control plane (forward.go). An inference request walks the stages in
// order, each in its package: admit (who calls, the balance), plan (the model, its routes,
// the bounds), admit again (limits, fair queue, price hold: a Ticket), attempt (the routes,
// until one answers: an Exchange), relay (the answer or the stream) and settle (the charge
// and the record).
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/accesslog"
	"github.com/sekgate/gateway/dataplane/admit"
	"github.com/sekgate/gateway/dataplane/attempt"
	"github.com/sekgate/gateway/dataplane/baseurl"
	"github.com/sekgate/gateway/dataplane/cplink"
	"github.com/sekgate/gateway/dataplane/dialect"
	"github.com/sekgate/gateway/dataplane/edge"
	"github.com/sekgate/gateway/dataplane/fairq"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/limits"
	"github.com/sekgate/gateway/dataplane/loadstat"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/relay"
	"github.com/sekgate/gateway/dataplane/reqbody"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/dataplane/settle"
	"github.com/sekgate/gateway/dataplane/telemetry"
	"github.com/sekgate/gateway/dataplane/tracing"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/residency"
)

// MaxBodySize is the interface's limit on inference request bodies.
const MaxBodySize = 8 << 20

// maxSystemOneBody is the limit on /v1/systemone bodies.
const maxSystemOneBody = 128 << 10

// Meter is what the stages need of metering (dataplane/meter; dataplane/memmeter in
// memory): it takes the records (settle.Meter) and knows the balances (admit.Balances);
// one that can hold part of a balance (admit.Holder) holds requests' maximum prices.
type Meter interface {
	settle.Meter
	admit.Balances
}

// Config configures a Server.
type Config struct {
	// Store holds the current snapshot index (required). An empty store means not ready.
	Store *index.Store
	// Meter admits and records requests (required).
	Meter Meter
	// Telemetry receives the request, admission and upstream figures (dataplane/telemetry);
	// default: a private registry nobody serves.
	Telemetry *telemetry.Metrics
	// AccessLog, when set, gets one line per inference request (dataplane/accesslog).
	AccessLog *accesslog.Log
	// Tracer, when set, traces inference requests (dataplane/tracing).
	Tracer *tracing.Tracer
	// Pool forwards to upstreams (default: proxy.NewPool with defaults).
	Pool *proxy.Pool
	// Selector orders eligible routes: priority, then each model's routing policy (default:
	// a Selector with a fresh load registry; without Loads, weighted random).
	Selector *routing.Selector
	// FairQueue, when set, holds requests while every eligible route is saturated, in
	// per-account turns (dataplane/fairq); nil: requests go to the servers' own queues.
	FairQueue *fairq.Queue
	// Refusals, when set, counts the requests refused after authentication and before
	// routing (no record is made for them), for the operator (dataplane/refusals).
	Refusals RefusalCounter
	// Health holds the per-route circuit breakers (default: routing.NewHealth defaults:
	// open after 5 consecutive failures or half of >= 20 attempts in 30s, probe after 10s).
	Health *routing.Health
	// Limiter enforces per-key and per-account rate and concurrency limits (default: the
	// full limits of the snapshot, limits.New with ShareNodes 1 and no fleet shares).
	Limiter *limits.Limiter
	// MaxAttempts bounds the routes one request tries before its first byte (default 3).
	MaxAttempts int
	// RequestTimeout bounds a request from routing to its last byte, failover and streams
	// included (default 10m); single attempts are bounded by their route's timeouts too.
	RequestTimeout time.Duration
	// DisableClientWatch turns off watching the client's connection for a disconnect while
	// the upstream works (then a disconnect is noticed at the next write to the client).
	DisableClientWatch bool
	// ClientWatchDelay is how long a request waits on its upstream before its client's
	// connection is watched (default 20ms; negative: at once). A request answered sooner
	// never pays for a watch; a client leaving earlier is noticed at most this late.
	ClientWatchDelay time.Duration
	// Link is the node's link to its control plane (address, TLS, node credentials), over
	// which /v1/service/* and /v1/stripe/webhook are forwarded; without it those paths
	// answer 503.
	Link *cplink.Client
	// TestBoxToken is the console test box's own token (not the node token), admitted only
	// on the private listener of ServeTestBox (testbox.go); empty: no test box.
	TestBoxToken string
	// DocsURL is the public reference: the target of GET /docs and the documentation_url of
	// endpoint_not_supported errors (default: this gateway's /openapi.json).
	DocsURL string
	// PublicURL is the base URL clients use to reach the gateway (e.g. https://api.example.com,
	// behind a proxy or load balancer): named in hints, in openapi.json's servers and in
	// the /docs and 501 links (default: the address of the socket a client connected to;
	// hints then use the request's Host).
	PublicURL string
	// Register, when set, adds routes (e.g. /openapi.json, /docs) before the server starts.
	Register func(r *router.Router)
	// HeaderTimeout bounds reading a request's headers, from its first byte (on a new
	// connection: from the accept) (default 10s).
	HeaderTimeout time.Duration
	// BodyIdleTimeout bounds each wait for request body bytes, and the wait for a body of
	// up to 8 KiB (the first byte of a longer one) after its headers (default 10s).
	BodyIdleTimeout time.Duration
	// MinBodyRate is the lowest average rate, in bytes per second, at which a request body
	// may arrive once it has taken longer than BodyIdleTimeout (default 4096; negative: off).
	MinBodyRate int
	// IdleTimeout bounds keep-alive idleness between requests (default 60s).
	IdleTimeout time.Duration
	// WriteTimeout bounds every single write to a client, stream flushes included: a client
	// that stops reading is cut and its upstream request cancelled (default 30s).
	WriteTimeout time.Duration
	// MaxHeaderBytes bounds a request's line and headers; larger ones get 431 (default 8192).
	MaxHeaderBytes int
	// MaxConns caps open client connections in total; MaxConnsPerAddr the connections per
	// client address (IPv4 address or IPv6 /64; trusted proxies exempt) that have not yet
	// presented a valid key. Over a cap a connection is answered 503 or 429 and closed
	// (defaults 10000 and 100; negative: no cap). A connection whose request authenticated
	// counts against its account instead: MaxConnsPerAccount (default 1000; negative: no
	// cap), and the account's request limits (limits.Limiter).
	MaxConns, MaxConnsPerAddr, MaxConnsPerAccount int
	// AddrWait is how long a new connection over MaxConnsPerAddr waits, unread, for a place
	// of its address (another of its connections authenticating or closing) before it is
	// refused, so that a client opening many connections at once is served once its first
	// ones authenticate (default 2s; negative: refused at once). At most 10 times
	// MaxConnsPerAddr wait per address.
	AddrWait time.Duration
	// TrustedProxies are the proxies whose X-Forwarded-For names the client (default none:
	// the TCP peer is the client).
	TrustedProxies *edge.Proxies
	// Country is the ISO 3166-1 alpha-2 code of where this node runs: accounts whose
	// residency policy does not admit it are refused with 403 residency_unsatisfiable
	// (default empty: the node admits every account and residency is kept by route choice).
	Country string
	// Region is the operator's name for where this node runs (e.g. "se-sto"): lower-case
	// letters, digits and '-', at most 63; recorded as node_region in every request's
	// routing (default empty: not recorded).
	Region string
	// RegionURLs maps a residency policy (se, eu, any) to the base URL of the region that
	// serves it: the documentation_url of this node's residency refusals. An entry here
	// overrides the snapshot's (the control plane's --region-urls) for its policy.
	RegionURLs map[string]string
	// Concurrency caps concurrent connections (default 256k).
	Concurrency int
	Logger      *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Server is the public listener.
type Server struct {
	cfg          Config
	log          *slog.Logger
	now          func() time.Time
	srv          *fasthttp.Server
	router       *router.Router
	cp           *http.Client // to the control plane over Config.Link
	notSupported *apierror.Error
	tel          *telemetry.Metrics
	access       *accesslog.Log
	tracer       *tracing.Tracer
	// oversized holds the headers of requests whose declared length is over their
	// endpoint's limit while fasthttp tries its first body read (headerReceived), so that
	// handleServerError answers 413 when that read finds nothing.
	oversized sync.Map // *fasthttp.RequestHeader -> oversizedEntry
	// oversizedN counts oversized's entries, so that headerReceived clears a stale one (its
	// client closed before the first read failed) only when there may be any.
	oversizedN atomic.Int64
	// proxied counts the requests in handling per client address of clients behind a
	// trusted proxy (nil without trusted proxies): the per-address cap of the listener
	// cannot see them.
	proxied  *edge.Counter
	dialects dialect.Memo // servers detected on routes that name none
	settle   *settle.Settler
	admit    *admit.Admitter
	runner   *attempt.Runner
	relay    *relay.Relayer
	body     reqbody.Reader
	base     baseurl.Resolver
}

// New validates cfg and builds a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Meter == nil {
		return nil, errors.New("server: Store and Meter are required")
	}
	if cfg.Pool == nil {
		cfg.Pool = proxy.NewPool(proxy.Config{})
	}
	if cfg.Selector == nil {
		cfg.Selector = &routing.Selector{Loads: loadstat.NewRegistry()}
	}
	defDur(&cfg.HeaderTimeout, 10*time.Second)
	defDur(&cfg.BodyIdleTimeout, 10*time.Second)
	defDur(&cfg.IdleTimeout, 60*time.Second)
	defDur(&cfg.WriteTimeout, 30*time.Second)
	defInt(&cfg.MinBodyRate, 4096)
	defInt(&cfg.MaxHeaderBytes, 8192)
	defInt(&cfg.MaxConns, 10000)
	defInt(&cfg.MaxConnsPerAddr, 100)
	defInt(&cfg.MaxConnsPerAccount, 1000)
	defDur(&cfg.AddrWait, 2*time.Second)
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 256 * 1024
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Health == nil {
		cfg.Health = routing.NewHealth(routing.HealthConfig{Logger: cfg.Logger})
	}
	if cfg.Limiter == nil {
		cfg.Limiter = limits.New(limits.Config{Now: cfg.Now})
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 3
	}
	if cfg.ClientWatchDelay == 0 {
		cfg.ClientWatchDelay = attempt.DefaultClientWatchDelay
	} else if cfg.ClientWatchDelay < 0 {
		cfg.ClientWatchDelay = 0
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Minute
	}
	if cfg.Telemetry == nil {
		cfg.Telemetry = telemetry.New()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, now: cfg.Now, notSupported: errNotSupported, tel: cfg.Telemetry, access: cfg.AccessLog, tracer: cfg.Tracer}
	if cfg.TrustedProxies.Len() > 0 && cfg.MaxConnsPerAddr > 0 {
		s.proxied = edge.NewCounter(cfg.MaxConnsPerAddr)
	}
	if cfg.PublicURL != "" {
		u, err := baseurl.Parse(cfg.PublicURL)
		if err != nil {
			return nil, fmt.Errorf("server: PublicURL %q: %w", cfg.PublicURL, err)
		}
		s.cfg.PublicURL = u
	}
	s.base = baseurl.Resolver{Public: s.cfg.PublicURL, Proxies: cfg.TrustedProxies}
	if cfg.DocsURL != "" {
		s.notSupported = errNotSupported.WithDoc(cfg.DocsURL)
	}
	if !residency.ValidCountry(cfg.Country) {
		return nil, fmt.Errorf("server: Country %q is not an upper-case ISO 3166-1 alpha-2 country code", cfg.Country)
	}
	if !internalapi.ValidRegion(cfg.Region) {
		return nil, fmt.Errorf("server: Region %q is not lower-case letters, digits and '-' (at most 63)", cfg.Region)
	}
	s.settle = &settle.Settler{Meter: cfg.Meter, Telemetry: cfg.Telemetry, Access: cfg.AccessLog, Now: cfg.Now}
	holder, _ := cfg.Meter.(admit.Holder)
	var routed func(*fasthttp.RequestCtx, *settle.Box)
	if s.access != nil || s.tracer != nil {
		routed = s.routed // the record makes the access-log line and ends the span
	}
	s.runner = attempt.New(attempt.Config{Pool: cfg.Pool, Selector: cfg.Selector, Health: cfg.Health,
		FairQueue: cfg.FairQueue, Dialects: &s.dialects, Settler: s.settle, Telemetry: cfg.Telemetry,
		Logger: cfg.Logger, Now: cfg.Now, MaxAttempts: cfg.MaxAttempts, RequestTimeout: cfg.RequestTimeout,
		ClientWatch: !cfg.DisableClientWatch, ClientWatchDelay: cfg.ClientWatchDelay, Region: cfg.Region, Routed: routed})
	s.body = reqbody.Reader{IdleTimeout: cfg.BodyIdleTimeout, MinRate: max(cfg.MinBodyRate, 0)}
	s.relay = relay.New(relay.Config{Health: cfg.Health, Dialects: &s.dialects, Telemetry: cfg.Telemetry})
	s.admit = admit.New(admit.Config{Store: cfg.Store, Balances: cfg.Meter, Holder: holder, Limiter: cfg.Limiter,
		FairQueue: cfg.FairQueue, Selector: cfg.Selector, Telemetry: cfg.Telemetry, TestBoxToken: cfg.TestBoxToken,
		Country: cfg.Country, RegionURLs: cfg.RegionURLs, Now: cfg.Now})
	if cfg.Link != nil {
		s.cp = cfg.Link.HTTPClient(30 * time.Second)
		s.cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	s.router = s.routes()
	s.srv = &fasthttp.Server{
		Handler:      s.handle,
		ErrorHandler: s.handleServerError,
		Name:         "sekgate",
		// Bodies are streamed: fasthttp reads at most 8 KiB of one before the handler runs,
		// and handlers read the rest only after authentication and the size check
		// (body.go). MaxRequestBodySize, set per endpoint in HeaderReceived, only caps that
		// first read.
		StreamRequestBody:  true,
		MaxRequestBodySize: MaxBodySize,
		HeaderReceived:     s.headerReceived,
		ExpectHandler:      s.expectContinue,
		ReadBufferSize:     cfg.MaxHeaderBytes,
		// The header timeout: fasthttp sets it at the accept and at each request's first
		// byte; HeaderReceived replaces it with the body's.
		ReadTimeout: cfg.HeaderTimeout,
		IdleTimeout: cfg.IdleTimeout,
		// No WriteTimeout here: streams are long. The listener puts a deadline on every
		// single write instead (Serve).
		Concurrency:                   cfg.Concurrency,
		DisablePreParseMultipartForm:  true,
		NoDefaultContentType:          true,
		DisableHeaderNamesNormalizing: false,
		SecureErrorLogMessage:         true,
		ReduceMemoryUsage:             true,
		CloseOnShutdown:               true,
		Logger:                        fasthttpLogger{cfg.Logger},
	}
	return s, nil
}

// Handler returns the request handler (for tests and embedding).
func (s *Server) Handler() fasthttp.RequestHandler { return s.handle }

// Serve serves on ln until Shutdown, within the connection caps and the per-write deadline.
func (s *Server) Serve(ln net.Listener) error { return s.srv.Serve(s.Listener(ln)) }

// Listener wraps ln with the server's connection caps and write deadline.
func (s *Server) Listener(ln net.Listener) *edge.Listener {
	return edge.NewListener(ln, edge.ListenerConfig{
		MaxConns: max(s.cfg.MaxConns, 0), MaxConnsPerAddr: max(s.cfg.MaxConnsPerAddr, 0),
		MaxConnsPerAccount: max(s.cfg.MaxConnsPerAccount, 0),
		AddrWait:           max(s.cfg.AddrWait, 0), MaxWaitingPerAddr: 10 * max(s.cfg.MaxConnsPerAddr, 0),
		Trusted: s.cfg.TrustedProxies, WriteTimeout: s.cfg.WriteTimeout,
		RefuseTotal:   edge.Response(503, "Service Unavailable", errTooManyConns.JSON(false), "Retry-After", "1"),
		RefusePerAddr: edge.Response(429, "Too Many Requests", errTooManyAddrConns.JSON(false), "Retry-After", "1"),
		OnRefuse:      s.tel.ConnRefused,
		Logger:        s.log,
	})
}

// headerReceived runs after a request's headers, before fasthttp reads any of its body:
// the body's first read (prefetchSize) gets BodyIdleTimeout. fasthttp reads at least one
// body byte before a handler runs; a declared length over the endpoint's limit gets no time
// for it: a byte already received goes to the handler (readBody answers 413), and otherwise
// the read fails at once and handleServerError answers 413, before the body arrives.
func (s *Server) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	limit := bodyLimit(h.RequestURI())
	if h.ContentLength() > limit {
		e := oversizedEntry{e: tooLargeFor(limit), ms: messagesPath(h.RequestURI())}
		if _, loaded := s.oversized.Swap(h, e); !loaded {
			s.oversizedN.Add(1)
		}
		return fasthttp.RequestConfig{ReadTimeout: time.Nanosecond, MaxRequestBodySize: 1}
	}
	if s.oversizedN.Load() > 0 {
		s.takeOversized(h)
	}
	return fasthttp.RequestConfig{ReadTimeout: s.cfg.BodyIdleTimeout, MaxRequestBodySize: reqbody.PrefetchSize(h.ContentLength(), limit)}
}

// oversizedEntry is the 413 of a request whose declared length is over its limit, in the
// envelope style of its path.
type oversizedEntry struct {
	e  *apierror.Error
	ms bool
}

// takeOversized removes and returns h's entry in oversized.
func (s *Server) takeOversized(h *fasthttp.RequestHeader) (oversizedEntry, bool) {
	v, ok := s.oversized.LoadAndDelete(h)
	if !ok {
		return oversizedEntry{}, false
	}
	s.oversizedN.Add(-1)
	return v.(oversizedEntry), true
}

// Shutdown stops accepting connections and waits for open requests (streams included) to
// end; EndStreams ends the streams that would keep it waiting too long.
func (s *Server) Shutdown() error { return s.srv.Shutdown() }

// handle gives every response an X-Request-Id, then routes.
func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	var id [requestIDLen]byte
	newRequestID(&id, s.now())
	ctx.Response.Header.SetBytesV("X-Request-Id", id[:])
	if s.oversizedN.Load() > 0 && ctx.Request.Header.ContentLength() > bodyLimit(ctx.Request.Header.RequestURI()) {
		s.takeOversized(&ctx.Request.Header) // headerReceived's entry: the body's first byte had arrived
	}
	if reqbody.BadFraming(ctx.Request.Header.RawHeaders()) { // a length of -2 may be Transfer-Encoding: identity
		ctx.SetConnectionClose()
		writeError(ctx, errFraming)
		return
	}
	if s.proxied != nil {
		if key, ok := s.proxiedClient(ctx); ok && !s.admit.PresentsKey(ctx) {
			if !s.proxied.Acquire(key) {
				writeError(ctx, errTooManyAddrRequests)
				if reqbody.Left(ctx) {
					ctx.SetConnectionClose()
				}
				return
			}
			defer s.proxied.Release(key)
		}
	}
	if s.access != nil || s.tracer != nil {
		s.serveObserved(ctx) // access log, tracing (telemetry.go)
	} else {
		s.router.Handler(ctx)
	}
	if reqbody.Left(ctx) {
		// The handler answered without reading the body (a refusal): what follows on the
		// connection is body, not a request. Close after the answer, draining a little so
		// the client reads the answer rather than a reset.
		ctx.SetConnectionClose()
		if l, ok := ctx.Conn().(interface{ Linger() }); ok {
			l.Linger()
		}
	}
}

// handleServerError answers errors fasthttp meets before the handler runs (oversized or
// malformed requests) with the JSON envelope.
func (s *Server) handleServerError(ctx *fasthttp.RequestCtx, err error) {
	var id [requestIDLen]byte
	newRequestID(&id, s.now())
	ctx.Response.Header.SetBytesV("X-Request-Id", id[:])
	ctx.SetConnectionClose() // fasthttp closes after these anyway; say so
	var small *fasthttp.ErrSmallBuffer
	var ne net.Error
	if e, ok := s.takeOversized(&ctx.Request.Header); ok {
		// headerReceived's entry; fasthttp has reset the header by now.
		s.tel.Refused(telemetry.RefuseSize)
		writeErrorStyle(ctx, e.e, e.ms)
		return
	}
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		writeError(ctx, errTooLarge)
	case errors.As(err, &small):
		writeError(ctx, errHeadersTooLarge)
	case errors.As(err, &ne) && ne.Timeout():
		writeError(ctx, errReadTimeout)
	default:
		writeError(ctx, errBadRequest)
	}
}

// requestID returns the ID set on the response.
func requestID(ctx *fasthttp.RequestCtx) string {
	return string(ctx.Response.Header.Peek("X-Request-Id"))
}

// fasthttpLogger sends fasthttp's connection-level messages to slog at debug level.
type fasthttpLogger struct{ l *slog.Logger }

func (f fasthttpLogger) Printf(format string, args ...any) {
	if f.l.Enabled(context.Background(), slog.LevelDebug) {
		f.l.Debug(fmt.Sprintf(format, args...))
	}
}

func defDur(d *time.Duration, v time.Duration) {
	if *d == 0 {
		*d = v
	}
}

func defInt(n *int, v int) {
	if *n == 0 {
		*n = v
	}
}

// RefusalCounter counts requests refused after authentication and before routing, per
// account, key, status and error code (refusals.Counter).
type RefusalCounter interface {
	Add(account, key string, status int, code string)
}

// EndStreams ends every stream still being relayed, and any that starts later, with an
// error event in its client's protocol (relay.Relayer.EndStreams): the end of a drain.
func (s *Server) EndStreams() int { return s.relay.EndStreams() }

// OpenStreams is the number of streams being relayed.
func (s *Server) OpenStreams() int { return s.relay.OpenStreams() }
