package plane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/sekgate/gateway/controlplane/alerts"
	"github.com/sekgate/gateway/controlplane/api"
	"github.com/sekgate/gateway/controlplane/catalog"
	"github.com/sekgate/gateway/controlplane/console"
	"github.com/sekgate/gateway/controlplane/opsmetrics"
	"github.com/sekgate/gateway/controlplane/publish"
	"github.com/sekgate/gateway/controlplane/retention"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/internal/feedbus"
	"github.com/sekgate/gateway/shared/snapshot"
)

// plane is the control plane's parts, built by run's steps in order and closed in reverse.
type plane struct {
	cfg     Config
	log     *slog.Logger
	metrics *opsmetrics.Metrics

	st  *store.Store
	ops *opsServer
	pub *publish.Publisher
	// defaultLimits are the deployment's limits for accounts and keys without their own.
	defaultLimits snapshot.Limits
	ret           *retention.Job
	alerts        *alerts.Evaluator
	handlers      *api.Handlers
	admin         http.Handler // the admin API, with the console when it is served

	closers []func()
}

// close undoes the steps that ran, last first.
func (p *plane) close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
}

// openStore opens the database (migrating it) and starts the ops listener and, with
// --start-feed-listen, the start feed's NATS server.
func (p *plane) openStore(ctx context.Context) error {
	cfg := p.cfg
	st, err := store.Open(ctx, store.Config{DatabaseURL: cfg.DatabaseURL.Reveal(), MigrateDatabaseURL: cfg.MigrateDatabaseURL.Reveal(), MaxConns: int32(cfg.MaxConns), Logger: p.log,
		Metrics: p.metrics, RecordRetention: time.Duration(cfg.RetentionDays) * 24 * time.Hour,
		IngestConcurrency: cfg.IngestConcurrency})
	if err != nil {
		return err
	}
	p.st = st
	p.closers = append(p.closers, st.Close)
	if p.ops, err = startOps(cfg.Ops, p.metrics, st, p.log); err != nil {
		return err
	}
	p.closers = append(p.closers, p.ops.stop)
	if cfg.StartFeedListen != "" {
		bus, err := feedbus.Start(cfg.StartFeedListen, p.log)
		if err != nil {
			return err
		}
		p.closers = append(p.closers, bus.Close)
	}
	return nil
}

// newPublisher builds the snapshot publisher with the deployment's default limits and the
// signing key.
func (p *plane) newPublisher(context.Context) error {
	cfg := p.cfg
	var limits snapshot.Limits
	if cfg.DefaultLimitsFile != "" {
		b, err := os.ReadFile(cfg.DefaultLimitsFile)
		if err != nil {
			return fmt.Errorf("read default limits: %w", err)
		}
		if limits, err = catalog.ParseLimitsYAML(b); err != nil {
			return fmt.Errorf("default limits %s: %w", cfg.DefaultLimitsFile, err)
		}
	}
	signer, err := cfg.Link.signingKey()
	if err != nil {
		return err
	}
	p.defaultLimits = limits
	p.pub, err = publish.New(publish.Config{Store: p.st, Logger: p.log, DefaultLimits: limits, RegionURLs: cfg.regionURLs, Signer: signer, Reissue: cfg.Link.Reissue, Metrics: p.metrics})
	if err != nil {
		return err
	}
	watch(p.metrics, p.st, p.pub, p.log)
	return nil
}

// newRetention builds the retention job and makes the request records' day partitions
// due (today's among them) before the control plane serves.
func (p *plane) newRetention(ctx context.Context) error {
	var err error
	p.ret, err = retention.New(retention.Config{Store: p.st, Days: p.cfg.RetentionDays, SeriesDays: p.cfg.SeriesDays, Logger: p.log,
		OnDeleted: p.metrics.RetentionDeleted, OnDropped: p.metrics.RetentionDayDropped})
	if err != nil {
		return err
	}
	if n, err := p.ret.MakeDays(ctx); err != nil {
		return err
	} else if n > 0 {
		p.log.Info("made day partitions of request records", "days", n)
	}
	return nil
}

// newAlerts builds the alert rules' evaluator.
func (p *plane) newAlerts(context.Context) error {
	var err error
	p.alerts, err = alerts.New(alerts.Config{Store: p.st, Interval: p.cfg.AlertInterval, Logger: p.log})
	return err
}

// newHandlers builds both listeners' handlers: the node-facing API (with payments and
// signup) and the admin API with the console.
func (p *plane) newHandlers(context.Context) error {
	cfg := p.cfg
	acfg := api.Config{Store: p.st, Snapshots: p.pub, AdminToken: cfg.AdminToken.Reveal(), NodeTokens: strings.Split(cfg.NodeTokens.Reveal(), ","), Logger: p.log,
		ServiceLimits: cfg.ServiceLimits, DefaultLimits: p.defaultLimits}
	if err := addIntegrations(&acfg, cfg, p.st, p.metrics, p.log); err != nil {
		return err
	}
	var err error
	if acfg.TestBox, err = cfg.Console.testBox(cfg.NodeTokens.Reveal()); err != nil {
		return err
	}
	prov, err := cfg.OIDC.provider()
	if err != nil {
		return err
	}
	var starter console.OIDCStarter
	if prov != nil {
		acfg.OIDC, starter = prov, prov
	}
	if p.handlers, err = api.New(acfg); err != nil {
		return err
	}
	p.admin, err = cfg.Console.handler(p.handlers.Admin, starter, p.log)
	return err
}

// serve listens on the node-facing and admin listeners, runs the publisher, the
// retention job and the alert rules, and shuts down gracefully when ctx ends.
func (p *plane) serve(ctx context.Context) error {
	cfg, log := p.cfg, p.log
	serverTLS, err := cfg.Link.serverTLS(log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	if serverTLS != nil {
		ln = tls.NewListener(ln, serverTLS)
	}
	adminLn, err := net.Listen("tcp", cfg.Link.AdminListen)
	if err != nil {
		ln.Close()
		return fmt.Errorf("listen on %s: %w", cfg.Link.AdminListen, err)
	}
	// Requests derive from base, which is cancelled during shutdown to end long-polls.
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	newServer := func(h http.Handler) *http.Server {
		return &http.Server{
			Handler:           h,
			BaseContext:       func(net.Listener) context.Context { return base },
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       60 * time.Second,
			WriteTimeout:      90 * time.Second, // longer than the longest long-poll (60 s)
			IdleTimeout:       120 * time.Second,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		}
	}
	srv, adminSrv := newServer(p.handlers.Node), newServer(p.admin)
	bg, cancelBG := context.WithCancel(context.Background())
	defer cancelBG()
	done := make(chan struct{}, 3)
	go func() { p.pub.Run(bg); done <- struct{}{} }()
	go func() { p.ret.Run(bg); done <- struct{}{} }()
	go func() { p.alerts.Run(bg); done <- struct{}{} }()
	serveErr := make(chan error, 2)
	go func() { serveErr <- srv.Serve(ln) }()
	go func() { serveErr <- adminSrv.Serve(adminLn) }()
	log.Info("control plane listening", "addr", ln.Addr().String(), "tls", serverTLS != nil, "mtls", cfg.Link.TLSClientCAFile != "",
		"admin_addr", adminLn.Addr().String())

	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err = <-serveErr:
	}
	p.ops.beginDrain()
	// Stop accepting, let in-flight requests (usage batches) finish; after a short grace
	// period cancel what is still running, which ends long-polls at once. A batch cut off
	// here is rolled back and resent by its node.
	shCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	adminDone := make(chan error, 1)
	go func() { adminDone <- adminSrv.Shutdown(shCtx) }()
	shutdown := make(chan error, 1)
	go func() { shutdown <- srv.Shutdown(shCtx) }()
	select {
	case <-shutdown:
	case <-time.After(2 * time.Second):
		cancelBase()
		if shErr := <-shutdown; shErr != nil {
			srv.Close()
		}
	}
	if <-adminDone != nil {
		adminSrv.Close()
	}
	cancelBG()
	for range cap(done) {
		<-done
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
