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
	"github.com/sekgate/gateway/dataplane/dialect"
	"github.com/sekgate/gateway/dataplane/edge"
	"github.com/sekgate/gateway/dataplane/relay"
	"github.com/sekgate/gateway/dataplane/reqbody"
	"github.com/sekgate/gateway/dataplane/settle"
	"github.com/sekgate/gateway/dataplane/telemetry"
	"github.com/sekgate/gateway/dataplane/tracing"
	"github.com/sekgate/gateway/shared/apierror"
)

// MaxBodySize is the interface's limit on inference request bodies.
const MaxBodySize = 8 << 20

// maxSystemOneBody is the limit on /v1/systemone bodies.
const maxSystemOneBody = 128 << 10

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
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, now: cfg.Now, notSupported: errNotSupported, tel: cfg.Telemetry, access: cfg.AccessLog, tracer: cfg.Tracer}
	if cfg.TrustedProxies.Len() > 0 && cfg.MaxConnsPerAddr > 0 {
		s.proxied = edge.NewCounter(cfg.MaxConnsPerAddr)
	}
	s.base = baseurl.Resolver{Public: cfg.PublicURL, Proxies: cfg.TrustedProxies}
	if cfg.DocsURL != "" {
		s.notSupported = errNotSupported.WithDoc(cfg.DocsURL)
	}
	s.stages()
	if cfg.Link != nil {
		s.cp = cfg.Link.HTTPClient(30 * time.Second)
		s.cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	s.router = s.routes()
	s.srv = s.httpServer()
	return s, nil
}

// stages builds the request's stages from the configuration.
func (s *Server) stages() {
	s.settle = &settle.Settler{Meter: s.cfg.Meter, Telemetry: s.cfg.Telemetry, Access: s.cfg.AccessLog, Now: s.cfg.Now}
	holder, _ := s.cfg.Meter.(admit.Holder)
	var routed func(*fasthttp.RequestCtx, *settle.Box)
	if s.access != nil || s.tracer != nil {
		routed = s.routed // the record makes the access-log line and ends the span
	}
	s.runner = attempt.New(attempt.Config{Pool: s.cfg.Pool, Selector: s.cfg.Selector, Health: s.cfg.Health,
		FairQueue: s.cfg.FairQueue, Dialects: &s.dialects, Settler: s.settle, Telemetry: s.cfg.Telemetry,
		Logger: s.cfg.Logger, Now: s.cfg.Now, MaxAttempts: s.cfg.MaxAttempts, RequestTimeout: s.cfg.RequestTimeout,
		ClientWatch: !s.cfg.DisableClientWatch, ClientWatchDelay: s.cfg.ClientWatchDelay, Region: s.cfg.Region, Routed: routed})
	s.body = reqbody.Reader{IdleTimeout: s.cfg.BodyIdleTimeout, MinRate: max(s.cfg.MinBodyRate, 0)}
	s.relay = relay.New(relay.Config{Health: s.cfg.Health, Dialects: &s.dialects, Telemetry: s.cfg.Telemetry})
	s.admit = admit.New(admit.Config{Store: s.cfg.Store, Balances: s.cfg.Meter, Holder: holder, Limiter: s.cfg.Limiter,
		FairQueue: s.cfg.FairQueue, Selector: s.cfg.Selector, Telemetry: s.cfg.Telemetry, TestBoxToken: s.cfg.TestBoxToken,
		Country: s.cfg.Country, RegionURLs: s.cfg.RegionURLs, Now: s.cfg.Now})
}

// httpServer is the fasthttp server of the public listener.
func (s *Server) httpServer() *fasthttp.Server {
	return &fasthttp.Server{
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
		ReadBufferSize:     s.cfg.MaxHeaderBytes,
		// The header timeout: fasthttp sets it at the accept and at each request's first
		// byte; HeaderReceived replaces it with the body's.
		ReadTimeout: s.cfg.HeaderTimeout,
		IdleTimeout: s.cfg.IdleTimeout,
		// No WriteTimeout here: streams are long. The listener puts a deadline on every
		// single write instead (Serve).
		Concurrency:                   s.cfg.Concurrency,
		DisablePreParseMultipartForm:  true,
		NoDefaultContentType:          true,
		DisableHeaderNamesNormalizing: false,
		SecureErrorLogMessage:         true,
		ReduceMemoryUsage:             true,
		CloseOnShutdown:               true,
		Logger:                        fasthttpLogger{s.cfg.Logger},
	}
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
		if key, ok := s.cfg.TrustedProxies.Proxied(ctx.RemoteAddr(), ctx.Request.Header.PeekAll("X-Forwarded-For")); ok && !s.admit.PresentsKey(ctx) {
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
