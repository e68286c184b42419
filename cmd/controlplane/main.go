// Command controlplane runs the gateway's control plane backed by Postgres: snapshot sync,
// usage ingest and balance watch for data-plane nodes and the customer paths the data plane
// forwards on the node-facing listener (--listen, TLS and mTLS optional), and the admin API
// on its own listener (--admin-listen, loopback by default).
//
// Every flag can also be set by an environment variable GATEWAY_<FLAG_NAME_UPPER_SNAKE>
// (for example --database-url / GATEWAY_DATABASE_URL); a flag on the command line wins.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/sekgate/gateway/cmd/internal/daemon"
	"github.com/sekgate/gateway/cmd/internal/flagenv"
	"github.com/sekgate/gateway/cmd/internal/version"
	"github.com/sekgate/gateway/controlplane/api"
	"github.com/sekgate/gateway/controlplane/catalog"
	"github.com/sekgate/gateway/controlplane/opsmetrics"
	"github.com/sekgate/gateway/controlplane/payments"
	"github.com/sekgate/gateway/controlplane/publish"
	"github.com/sekgate/gateway/controlplane/retention"
	"github.com/sekgate/gateway/controlplane/signup"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/snapshot"
)

type config struct {
	listen, databaseURL, adminToken, nodeTokens, logLevel string
	migrateDatabaseURL                                    string
	defaultLimitsFile                                     string
	retentionDays, maxConns, signupPerMinute              int
	// Optional integrations: each is enabled when its required settings are given.
	signupConfirmURL, signupErrorURL                    string
	stripeSecretKey, stripeAPIBase, stripeWebhookSecret string
	topupSuccessURL, topupCancelURL                     string
	// Admin listener, token files, snapshot signing and TLS (issue 12).
	link linkConfig
	// Private ops listener: metrics and probes (issue 15).
	ops opsConfig
	// Base URL of the region serving each residency policy, carried in every snapshot
	// (issue 14): nodes name it when they refuse an account outside their country.
	regionURLs map[string]string
	// Operator console and its test box (issue 18).
	console consoleConfig
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("controlplane", flag.ContinueOnError)
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8081", "address of the node-facing listener (internal API and forwarded customer paths)")
	fs.StringVar(&c.databaseURL, "database-url", "", "Postgres connection URL of the runtime role, a member of gateway_runtime (required)")
	fs.StringVar(&c.migrateDatabaseURL, "migrate-database-url", "", "Postgres connection URL of the schema owner: migrations run over it, then it is closed (empty: migrate over --database-url)")
	fs.StringVar(&c.adminToken, "admin-token", "", "bearer token of the admin API, at least 32 bytes (or --admin-token-file)")
	fs.StringVar(&c.nodeTokens, "node-tokens", "", "comma-separated bearer tokens of data-plane nodes, each at least 32 bytes (or --node-tokens-file)")
	fs.IntVar(&c.retentionDays, "retention-days", 90, "days request records are kept (the ingest refuses records older than this less an hour)")
	fs.StringVar(&c.defaultLimitsFile, "default-limits-file", "", "YAML file of the request limits for accounts and keys without their own (e.g. configs/limits.default.yaml); empty: unlimited")
	fs.IntVar(&c.maxConns, "max-conns", 10, "maximum Postgres connections in the pool")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&c.signupConfirmURL, "signup-confirm-url", "", "public confirmation page of the signup form (enables /v1/service/signup with --signup-error-url)")
	fs.StringVar(&c.signupErrorURL, "signup-error-url", "", "public error page of the signup form")
	fs.IntVar(&c.signupPerMinute, "signup-rate-per-minute", 5, "signup submissions allowed per client address per minute (also the burst)")
	fs.StringVar(&c.stripeSecretKey, "stripe-secret-key", "", "payment provider secret key (enables /v1/service/topup with the top-up URLs)")
	fs.StringVar(&c.stripeAPIBase, "stripe-api-base", "", "payment provider API base URL (tests: a stripe-mock address)")
	fs.StringVar(&c.stripeWebhookSecret, "stripe-webhook-secret", "", "payment webhook signing secret (enables /v1/stripe/webhook)")
	fs.StringVar(&c.topupSuccessURL, "topup-success-url", "", "where checkout sends the customer after paying")
	fs.StringVar(&c.topupCancelURL, "topup-cancel-url", "", "where checkout sends the customer after cancelling")
	regionURLs := fs.String("region-urls", "", "comma-separated policy=base URL of the region serving each residency policy (se=https://se.example.com,eu=...,any=...), carried in every snapshot: a data-plane node names it when it refuses an account its country does not admit")
	c.link.register(fs)
	c.ops.register(fs)
	c.console.register(fs)
	if err := flagenv.Parse(fs, args, "GATEWAY_", nil); err != nil {
		return c, err
	}
	switch {
	case c.databaseURL == "":
		return c, errors.New("--database-url (GATEWAY_DATABASE_URL) is required")
	case c.retentionDays < 1:
		return c, errors.New("--retention-days must be at least 1")
	}
	var err error
	if c.regionURLs, err = snapshot.ParseRegionURLs(*regionURLs); err != nil {
		return c, fmt.Errorf("--region-urls: %w", err)
	}
	return c, c.link.resolve(&c)
}

func main() {
	if version.Requested(os.Args[1:]) {
		version.Print(os.Stdout, "controlplane")
		return
	}
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(2)
	}
	daemon.Run("controlplane", cfg.logLevel, func(ctx context.Context, log *slog.Logger) error { return run(ctx, cfg, log) })
}

func run(ctx context.Context, cfg config, log *slog.Logger) error {
	metrics := opsmetrics.New()
	st, err := store.Open(ctx, store.Config{DatabaseURL: cfg.databaseURL, MigrateDatabaseURL: cfg.migrateDatabaseURL, MaxConns: int32(cfg.maxConns), Logger: log,
		Metrics: metrics, RecordRetention: time.Duration(cfg.retentionDays) * 24 * time.Hour})
	if err != nil {
		return err
	}
	defer st.Close()
	ops, err := startOps(cfg.ops, metrics, st, log)
	if err != nil {
		return err
	}
	defer ops.stop()
	var limits snapshot.Limits
	if cfg.defaultLimitsFile != "" {
		b, err := os.ReadFile(cfg.defaultLimitsFile)
		if err != nil {
			return fmt.Errorf("read default limits: %w", err)
		}
		if limits, err = catalog.ParseLimitsYAML(b); err != nil {
			return fmt.Errorf("default limits %s: %w", cfg.defaultLimitsFile, err)
		}
	}
	signer, err := cfg.link.signingKey()
	if err != nil {
		return err
	}
	pub, err := publish.New(publish.Config{Store: st, Logger: log, DefaultLimits: limits, RegionURLs: cfg.regionURLs, Signer: signer, Reissue: cfg.link.reissue, Metrics: metrics})
	if err != nil {
		return err
	}
	watch(metrics, st, pub, log)
	ret, err := retention.New(retention.Config{Store: st, Days: cfg.retentionDays, Logger: log, OnDeleted: metrics.RetentionDeleted})
	if err != nil {
		return err
	}
	acfg := api.Config{Store: st, Snapshots: pub, AdminToken: cfg.adminToken, NodeTokens: strings.Split(cfg.nodeTokens, ","), Logger: log}
	if err := addIntegrations(&acfg, cfg, st, metrics, log); err != nil {
		return err
	}
	if acfg.TestBox, err = cfg.console.testBox(cfg.nodeTokens); err != nil {
		return err
	}
	handlers, err := api.New(acfg)
	if err != nil {
		return err
	}
	adminHandler, err := cfg.console.handler(handlers.Admin, log)
	if err != nil {
		return err
	}
	serverTLS, err := cfg.link.serverTLS(log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.listen, err)
	}
	if serverTLS != nil {
		ln = tls.NewListener(ln, serverTLS)
	}
	adminLn, err := net.Listen("tcp", cfg.link.adminListen)
	if err != nil {
		ln.Close()
		return fmt.Errorf("listen on %s: %w", cfg.link.adminListen, err)
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
	srv, adminSrv := newServer(handlers.Node), newServer(adminHandler)
	bg, cancelBG := context.WithCancel(context.Background())
	defer cancelBG()
	done := make(chan struct{}, 2)
	go func() { pub.Run(bg); done <- struct{}{} }()
	go func() { ret.Run(bg); done <- struct{}{} }()
	serveErr := make(chan error, 2)
	go func() { serveErr <- srv.Serve(ln) }()
	go func() { serveErr <- adminSrv.Serve(adminLn) }()
	log.Info("control plane listening", "addr", ln.Addr().String(), "tls", serverTLS != nil, "mtls", cfg.link.tlsClientCAFile != "",
		"admin_addr", adminLn.Addr().String())

	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err = <-serveErr:
	}
	ops.beginDrain()
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
	<-done
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// addIntegrations mounts the signup form, its admin review and the payment paths when
// their settings are given.
func addIntegrations(a *api.Config, cfg config, st *store.Store, metrics *opsmetrics.Metrics, log *slog.Logger) error {
	signups := st
	rev, err := signup.NewAdmin(signups, log)
	if err != nil {
		return err
	}
	a.Admin = rev.Routes()
	if cfg.signupConfirmURL != "" || cfg.signupErrorURL != "" {
		h, err := signup.NewHandler(signup.Config{Store: signups, ConfirmURL: cfg.signupConfirmURL, ErrorURL: cfg.signupErrorURL,
			Rate: rate.Limit(float64(cfg.signupPerMinute) / 60), Burst: cfg.signupPerMinute, Logger: log, OnSubmission: metrics.Signup})
		if err != nil {
			return err
		}
		a.Signup = h
	}
	if cfg.stripeSecretKey != "" {
		h, err := payments.NewTopup(payments.TopupConfig{SecretKey: cfg.stripeSecretKey, APIBase: cfg.stripeAPIBase, Sessions: st,
			SuccessURL: cfg.topupSuccessURL, CancelURL: cfg.topupCancelURL, Logger: log, OnSession: metrics.TopupSession})
		if err != nil {
			return err
		}
		a.Topup = h
	}
	if cfg.stripeWebhookSecret != "" {
		h, err := payments.NewWebhook(payments.WebhookConfig{Secret: cfg.stripeWebhookSecret, SecretKey: cfg.stripeSecretKey, Ledger: st, Logger: log, OnEvent: metrics.WebhookEvent})
		if err != nil {
			return err
		}
		a.Webhook = h
	}
	return nil
}
