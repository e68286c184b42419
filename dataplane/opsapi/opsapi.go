// Package opsapi serves a data-plane node's operator endpoints on a private listener,
// apart from the public one: Prometheus metrics (the registry dataplane/telemetry fills:
// requests, admission, upstreams, breakers, snapshot, usage spool, Go runtime and process
// figures), readiness and liveness probes and the Go profiler.
package opsapi

import (
	"log/slog"
	"net/http"
	"net/http/pprof"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Snapshots is what readiness needs to know about the node's snapshot.
type Snapshots interface {
	// Version returns the applied snapshot's version and whether there is one.
	Version() (int64, bool)
}

// Drain is the node's shutdown state as readiness reports it: once Begin is called,
// /readyz answers 503 so load balancers stop sending new requests while the node still
// serves. The zero value is not draining.
type Drain struct{ on atomic.Bool }

// Begin marks the node as shutting down.
func (d *Drain) Begin() { d.on.Store(true) }

// Draining reports whether Begin was called; a nil Drain never drains.
func (d *Drain) Draining() bool { return d != nil && d.on.Load() }

// Handler serves GET /metrics (Prometheus text exposition of reg, to which it adds
// gateway_ready), GET /readyz (200 once the node has a snapshot to serve from, 503 before
// and once d is draining), GET /livez (200 while the process serves; a liveness probe,
// independent of the control plane) and the Go profiler under /debug/pprof/.
func Handler(reg *prometheus.Registry, s Snapshots, d *Drain, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gateway_ready",
		Help: "1 when the node has a snapshot to serve from and is not shutting down, else 0 (/readyz)."}, func() float64 {
		if _, ok := s.Version(); ok && !d.Draining() {
			return 1
		}
		return 0
	}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      reg, // promhttp's own scrape counters
	}))
	// Profiles for performance work; the listener is private (--ops-listen).
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if d.Draining() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("shutting down"))
			return
		}
		if _, ok := s.Version(); !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("no snapshot yet"))
			return
		}
		_, _ = w.Write([]byte("ready"))
	})
	return mux
}
