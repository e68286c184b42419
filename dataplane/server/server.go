// Package server is the data plane's public HTTP edge: fasthttp with fasthttp/router,
// request IDs, the JSON error envelope, API-key authentication from the snapshot, balance
// admission, model reads, inference forwarding and the forwarded account paths.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/catalog"
	"github.com/sekgate/gateway/dataplane/limits"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/shared/apierror"
)

// MaxBodySize is the interface's limit on inference request bodies.
const MaxBodySize = 8 << 20

// maxSystemOneBody is the limit on /v1/systemone bodies.
const maxSystemOneBody = 128 << 10

// Config configures a Server.
type Config struct {
	// Store holds the current snapshot index (required). An empty store means not ready.
	Store *catalog.Store
	// Meter admits and records requests (required).
	Meter Meter
	// Metrics receives the request counters and histograms (gateway_requests_total,
	// gateway_tokens_total, gateway_request_duration_seconds); default: a private set.
	Metrics *metrics.Set
	// Pool forwards to upstreams (default: proxy.NewPool with defaults).
	Pool *proxy.Pool
	// Selector orders eligible routes: priority, then weighted random (default: math/rand).
	Selector *routing.Selector
	// Health holds the per-route circuit breakers (default: routing.NewHealth defaults:
	// open after 5 consecutive failures or half of >= 20 attempts in 30s, probe after 10s).
	Health *routing.Health
	// Limiter enforces per-key and per-account rate and concurrency limits (default: each
	// node the full limits of the snapshot, limits.New with ShareNodes 1).
	Limiter *limits.Limiter
	// MaxAttempts bounds the routes one request tries before its first byte (default 3).
	MaxAttempts int
	// RequestTimeout bounds a request from routing to its last byte, failover and streams
	// included (default 10m); single attempts are bounded by their route's timeouts too.
	RequestTimeout time.Duration
	// DisableClientWatch turns off watching the client's connection for a disconnect while
	// the upstream works (then a disconnect is noticed at the next write to the client).
	DisableClientWatch bool
	// ControlPlaneURL is where /v1/service/* and /v1/stripe/webhook are forwarded; without it
	// those paths answer 503.
	ControlPlaneURL string
	// NodeToken and NodeID identify this node to the control plane.
	NodeToken, NodeID string
	// DocsURL is the public reference: the target of GET /docs and the documentation_url of
	// endpoint_not_supported errors (default: this gateway's /openapi.json).
	DocsURL string
	// Register, when set, adds routes (e.g. /openapi.json, /docs) before the server starts.
	Register func(r *router.Router)
	// ReadTimeout bounds reading a request (default 60s); IdleTimeout bounds keep-alive
	// idleness (default 120s).
	ReadTimeout, IdleTimeout time.Duration
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
	cp           *fasthttp.HostClient
	cpHost       string
	notSupported *apierror.Error
	metrics      *requestMetrics
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
		cfg.Selector = &routing.Selector{}
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 60 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 120 * time.Second
	}
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
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Minute
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.NewSet()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, now: cfg.Now, notSupported: errNotSupported, metrics: newRequestMetrics(cfg.Metrics)}
	if cfg.DocsURL != "" {
		s.notSupported = errNotSupported.WithDoc(cfg.DocsURL)
	}
	if cfg.ControlPlaneURL != "" {
		u, err := url.Parse(strings.TrimRight(cfg.ControlPlaneURL, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errors.New("server: bad control plane URL " + cfg.ControlPlaneURL)
		}
		addr := u.Host
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), map[bool]string{true: "443", false: "80"}[u.Scheme == "https"])
		}
		s.cpHost = u.Host
		s.cp = &fasthttp.HostClient{
			Addr: addr, IsTLS: u.Scheme == "https", Name: "sekgate-dataplane",
			MaxConns: 256, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
			MaxIdemponentCallAttempts: 1, DisablePathNormalizing: true,
		}
	}
	s.router = s.routes()
	s.srv = &fasthttp.Server{
		Handler:                       s.handle,
		ErrorHandler:                  s.handleServerError,
		Name:                          "sekgate",
		MaxRequestBodySize:            MaxBodySize,
		ReadTimeout:                   cfg.ReadTimeout,
		IdleTimeout:                   cfg.IdleTimeout,
		Concurrency:                   cfg.Concurrency,
		DisablePreParseMultipartForm:  true,
		NoDefaultContentType:          true,
		DisableHeaderNamesNormalizing: false,
		CloseOnShutdown:               true,
		Logger:                        fasthttpLogger{cfg.Logger},
		// Streams are long: no WriteTimeout; a dead client shows as a failed flush.
	}
	return s, nil
}

// Handler returns the request handler (for tests and embedding).
func (s *Server) Handler() fasthttp.RequestHandler { return s.handle }

// Serve serves on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.srv.Serve(ln) }

// Shutdown stops accepting connections and waits for open requests (streams included) to end.
func (s *Server) Shutdown() error { return s.srv.Shutdown() }

// handle gives every response an X-Request-Id, then routes.
func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	var id [requestIDLen]byte
	newRequestID(&id, s.now())
	ctx.Response.Header.SetBytesV("X-Request-Id", id[:])
	s.router.Handler(ctx)
}

// handleServerError answers errors fasthttp meets before the handler runs (oversized or
// malformed requests) with the JSON envelope.
func (s *Server) handleServerError(ctx *fasthttp.RequestCtx, err error) {
	var id [requestIDLen]byte
	newRequestID(&id, s.now())
	ctx.Response.Header.SetBytesV("X-Request-Id", id[:])
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		writeError(ctx, errTooLarge)
		return
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		writeError(ctx, apierror.New(408, apierror.TypeInvalidRequest, "request_timeout", "timed out reading the request"))
		return
	}
	writeError(ctx, errBadRequest)
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
