package plane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/sekgate/gateway/controlplane/opsmetrics"
	"github.com/sekgate/gateway/controlplane/publish"
	"github.com/sekgate/gateway/controlplane/store"
)

// opsConfig is the private ops listener's setting.
type opsConfig struct {
	Listen string `flag:"ops-listen" help:"private address for /metrics, /livez, /readyz and /debug/pprof/ (empty: off)"`
}

// opsServer is the running ops listener; a nil *opsServer (listener off) does nothing.
type opsServer struct {
	srv   *http.Server
	drain opsmetrics.Drain
	done  chan error
	log   *slog.Logger
}

// watch registers the collectors that read the store and the publisher at each scrape.
func watch(m *opsmetrics.Metrics, st *store.Store, pub *publish.Publisher, log *slog.Logger) {
	m.WatchPool(st.Pool())
	m.WatchNodes(opsmetrics.NodesConfig{Nodes: st, Logger: log, Current: func() (int64, bool) {
		if cur, _ := pub.Current(); cur != nil {
			return cur.Snapshot.Version, true
		}
		return 0, false
	}})
}

// startOps opens the ops listener when --ops-listen is set.
func startOps(cfg opsConfig, m *opsmetrics.Metrics, st *store.Store, log *slog.Logger) (*opsServer, error) {
	if cfg.Listen == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	o := &opsServer{done: make(chan error, 1), log: log}
	o.srv = &http.Server{
		Handler:           m.Handler(st.Ready, &o.drain, log),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() { o.done <- o.srv.Serve(ln) }()
	log.Info("ops listener serving /metrics, /livez, /readyz, /debug/pprof/", "addr", ln.Addr().String())
	return o, nil
}

// beginDrain makes /readyz answer 503 (shutdown has begun).
func (o *opsServer) beginDrain() {
	if o != nil {
		o.drain.Begin()
	}
}

// stop closes the ops listener, last, so probes and scrapes see the whole shutdown.
func (o *opsServer) stop() {
	if o == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := o.srv.Shutdown(ctx); err != nil {
		o.srv.Close()
	}
	if err := <-o.done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		o.log.Warn("ops listener failed", "err", err)
	}
}
