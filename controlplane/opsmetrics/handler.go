package opsmetrics

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Readiness is what /readyz checks: nil when the control plane can serve (Postgres
// reachable, migrations applied).
type Readiness func(ctx context.Context) error

// Drain marks the control plane as shutting down: once Begin is called /readyz answers
// 503. The zero value is not draining.
type Drain struct{ on atomic.Bool }

// Begin marks the process as shutting down.
func (d *Drain) Begin() { d.on.Store(true) }

// Draining reports whether Begin was called; a nil Drain never drains.
func (d *Drain) Draining() bool { return d != nil && d.on.Load() }

// Handler serves the ops listener: GET /metrics (Prometheus text exposition of the
// private registry), GET /livez (200 while the process serves) and GET /readyz (200 when
// ready passes within 2 s, 503 with the reason otherwise or once d is draining) and the Go
// profiler under /debug/pprof/ (as the data plane's ops listener: the listener is private).
func (m *Metrics) Handler(ready Readiness, d *Drain, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      m.reg, // promhttp's own scrape counters, in the private registry
	}))
	text := func(w http.ResponseWriter, status int, s string) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(s + "\n"))
	}
	// Profiles for performance work; a CPU profile must end within the ops server's
	// write timeout (controlplane/plane: 30 s).
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) { text(w, http.StatusOK, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if d.Draining() {
			text(w, http.StatusServiceUnavailable, "shutting down")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := ready(ctx); err != nil {
			log.Warn("not ready", "err", err)
			text(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
			return
		}
		text(w, http.StatusOK, "ready")
	})
	return mux
}
