// Package bare is a bare fasthttp reverse proxy in front of one plain-HTTP upstream: the
// request is forwarded as received, the answer relayed as returned. It does no auth, routing,
// metering or body inspection; it exists so benchmarks can compare the gateway's data plane
// with the least any fasthttp gateway must do.
//
// Upstream answers are read as streams. A text/event-stream answer is relayed line by line
// with a flush after every event's terminating blank line (never batching events); any other
// answer is read whole and sent with its Content-Length.
package bareproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// Config configures a Proxy.
type Config struct {
	// Upstream is the host:port of the plain-HTTP upstream. Required.
	Upstream string
	// MaxConns bounds connections to the upstream (default 20,000: enough for the benchmark's
	// open-streams scenario).
	MaxConns int
	// IdleTimeout closes idle client keep-alive connections (default 2 minutes).
	IdleTimeout time.Duration
}

// Proxy is the reverse proxy.
type Proxy struct {
	hc  *fasthttp.HostClient
	srv *fasthttp.Server
}

// New validates cfg and builds a Proxy.
func New(cfg Config) (*Proxy, error) {
	if cfg.Upstream == "" {
		return nil, errors.New("bare: upstream is required")
	}
	if _, _, err := net.SplitHostPort(cfg.Upstream); err != nil {
		return nil, fmt.Errorf("bare: upstream %q: %w", cfg.Upstream, err)
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 20_000
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 2 * time.Minute
	}
	p := &Proxy{}
	p.hc = &fasthttp.HostClient{
		Addr:                      cfg.Upstream,
		MaxConns:                  cfg.MaxConns,
		MaxIdleConnDuration:       30 * time.Second,
		MaxIdemponentCallAttempts: 1,
		DisablePathNormalizing:    true,
		NoDefaultUserAgentHeader:  true,
		ReadBufferSize:            16 << 10,
		WriteBufferSize:           16 << 10,
		MaxConnWaitTimeout:        5 * time.Second,
	}
	p.srv = &fasthttp.Server{
		Handler:               p.handle,
		Name:                  "bareproxy",
		NoDefaultServerHeader: true,
		NoDefaultDate:         true,
		IdleTimeout:           cfg.IdleTimeout,
		ReadTimeout:           60 * time.Second,
		MaxRequestBodySize:    16 << 20,
		Concurrency:           256 * 1024,
	}
	return p, nil
}

// Handler returns the request handler (for tests).
func (p *Proxy) Handler() fasthttp.RequestHandler { return p.handle }

// Serve serves connections from ln until Shutdown.
func (p *Proxy) Serve(ln net.Listener) error { return p.srv.Serve(ln) }

// Shutdown stops accepting and waits for open requests until ctx ends.
func (p *Proxy) Shutdown(ctx context.Context) error { return p.srv.ShutdownWithContext(ctx) }

var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

var sseType = []byte("text/event-stream")

func (p *Proxy) handle(ctx *fasthttp.RequestCtx) {
	req := &ctx.Request
	req.Header.Del(fasthttp.HeaderConnection)
	up := fasthttp.AcquireResponse()
	up.StreamBody = true
	if err := p.hc.Do(req, up); err != nil {
		fasthttp.ReleaseResponse(up)
		ctx.Response.Header.SetContentType("application/json")
		ctx.SetStatusCode(fasthttp.StatusBadGateway)
		ctx.SetBodyString(`{"error":{"message":"upstream unavailable","type":"api_error"}}`)
		return
	}
	up.Header.CopyTo(&ctx.Response.Header)
	ctx.Response.Header.Del(fasthttp.HeaderConnection)
	if !bytes.HasPrefix(up.Header.ContentType(), sseType) {
		ctx.Response.SetBody(up.Body()) // reads the whole upstream body
		fasthttp.ReleaseResponse(up)
		return
	}
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer fasthttp.ReleaseResponse(up) // closes the upstream stream, cancelling it early
		br := readers.Get().(*bufio.Reader)
		br.Reset(up.BodyStream())
		defer func() { br.Reset(nil); readers.Put(br) }()
		relayEvents(br, w)
	})
}

// relayEvents copies SSE lines from r to w, flushing after each blank line (the end of an
// event) and at the end of the stream. It returns when either side fails.
func relayEvents(r *bufio.Reader, w *bufio.Writer) {
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			if _, werr := w.Write(line); werr != nil {
				return
			}
			if err == nil && (len(line) == 1 || len(line) == 2 && line[0] == '\r') {
				if w.Flush() != nil {
					return
				}
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			_ = w.Flush()
			return
		}
	}
}
