// Command controlplane runs the gateway's control plane backed by Postgres: snapshot sync,
// usage ingest and balance watch for data-plane nodes and the customer paths the data plane
// forwards on the node-facing listener (--listen, TLS and mTLS optional), and the admin API
// on its own listener (--admin-listen, loopback by default).
//
// Every flag can also be set by an environment variable GATEWAY_<FLAG_NAME_UPPER_SNAKE>
// (for example --database-url / GATEWAY_DATABASE_URL); a flag on the command line wins.
package plane

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"golang.org/x/time/rate"

	"github.com/sekgate/gateway/controlplane/api"
	"github.com/sekgate/gateway/controlplane/opsmetrics"
	"github.com/sekgate/gateway/controlplane/payments"
	"github.com/sekgate/gateway/controlplane/retention"
	"github.com/sekgate/gateway/controlplane/signup"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/internal/daemon"
	"github.com/sekgate/gateway/internal/flagenv"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Config is the control plane's settings: each is a flag (docs/configuration.md), also read
// from GATEWAY_<NAME> and from the --config file.
type Config struct {
	listen              string            // node-facing listener address
	databaseURL         flagenv.DSN       // Postgres URL of the runtime role
	migrateDatabaseURL  flagenv.DSN       // Postgres URL of the schema owner (migrations)
	adminToken          flagenv.Secret    // bearer token of the admin API
	nodeTokens          flagenv.Secret    // comma-separated node bearer tokens
	logLevel            string            // debug, info, warn or error
	defaultLimitsFile   string            // limits for accounts and keys without their own
	retentionDays       int               // days request records are kept
	seriesDays          int               // days per-minute series are kept
	maxConns            int               // Postgres pool size
	signupPerMinute     int               // signup submissions per address per minute
	ingestConcurrency   int               // usage batches applied at once
	serviceLimits       api.ServiceLimits // /v1/service/* reads, top-ups and checkouts
	signupConfirmURL    string            // signup form's confirmation page (enables signup)
	signupErrorURL      string            // signup form's error page
	stripeSecretKey     flagenv.Secret    // payment provider secret key (enables top-ups)
	stripeAPIBase       string            // payment provider API base URL
	stripeWebhookSecret flagenv.Secret    // payment webhook signing secret
	topupSuccessURL     string            // checkout's return page after paying
	topupCancelURL      string            // checkout's return page after cancelling
	regionURLs          map[string]string // per residency policy, the region's base URL
	regionURLsFlag      string            // --region-urls as given
	alertInterval       time.Duration     // how often alert rules are evaluated
	link                linkConfig        // admin listener, token files, signing, TLS
	ops                 opsConfig         // private metrics and probes listener
	console             consoleConfig     // operator console and its test box
}

// FlagSet returns the control plane's settings as flags with their defaults, unparsed
// (for the configuration reference).
func FlagSet() *flag.FlagSet {
	var c Config
	return flagSet(&c)
}

func flagSet(c *Config) *flag.FlagSet {
	fs := flag.NewFlagSet("controlplane", flag.ContinueOnError)
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8081", "address of the node-facing listener (internal API and forwarded customer paths)")
	fs.Var(&c.databaseURL, "database-url", "Postgres connection URL of the runtime role, a member of gateway_runtime (required)")
	fs.Var(&c.migrateDatabaseURL, "migrate-database-url", "Postgres URL of the schema owner, used for migrations then closed (empty: --database-url)")
	fs.Var(&c.adminToken, "admin-token", "bearer token of the admin API, at least 32 bytes (or --admin-token-file)")
	fs.Var(&c.nodeTokens, "node-tokens", "comma-separated node bearer tokens, each ≥ 32 bytes (or --node-tokens-file)")
	fs.IntVar(&c.retentionDays, "retention-days", 90, "days request records are kept (whole day partitions are dropped)")
	fs.IntVar(&c.seriesDays, "series-retention-days", retention.DefaultSeriesDays, "days the per-minute series of the live service view are kept")
	fs.StringVar(&c.defaultLimitsFile, "default-limits-file", "", "YAML file of request limits for accounts and keys without their own (empty: unlimited)")
	fs.IntVar(&c.maxConns, "max-conns", 10, "maximum Postgres connections in the pool")
	fs.IntVar(&c.ingestConcurrency, "ingest-concurrency", store.DefaultIngestConcurrency, "usage batches applied at once; the rest wait in the process (negative: no bound)")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&c.signupConfirmURL, "signup-confirm-url", "", "public confirmation page of the signup form (with --signup-error-url enables signup)")
	fs.StringVar(&c.signupErrorURL, "signup-error-url", "", "public error page of the signup form")
	fs.IntVar(&c.signupPerMinute, "signup-rate-per-minute", 5, "signup submissions allowed per client address per minute (also the burst)")
	fs.Var(&c.stripeSecretKey, "stripe-secret-key", "payment provider secret key (enables /v1/service/topup with the top-up URLs)")
	fs.StringVar(&c.stripeAPIBase, "stripe-api-base", "", "payment provider API base URL (tests: a stripe-mock address)")
	fs.Var(&c.stripeWebhookSecret, "stripe-webhook-secret", "payment webhook signing secret (enables /v1/stripe/webhook)")
	fs.StringVar(&c.topupSuccessURL, "topup-success-url", "", "where checkout sends the customer after paying")
	fs.StringVar(&c.topupCancelURL, "topup-cancel-url", "", "where checkout sends the customer after cancelling")
	fs.StringVar(&c.regionURLsFlag, "region-urls", "", "policy=base URL pairs of the regions serving each residency policy")
	fs.Float64Var(&c.serviceLimits.ReadsPerSecond, "service-reads-per-second", 10, "/v1/service/* reads per second per key (an account gets twice as many)")
	fs.IntVar(&c.serviceLimits.ReadBurst, "service-read-burst", 50, "burst of /v1/service/* reads per key (an account gets twice as many)")
	fs.IntVar(&c.serviceLimits.TopupsPerMinute, "service-topups-per-minute", 5, "top-ups per minute per key and per account (also the burst)")
	fs.IntVar(&c.serviceLimits.CheckoutsPerHour, "service-checkouts-per-hour", 30, "checkout sessions per account per hour (also the burst)")
	fs.DurationVar(&c.alertInterval, "alert-interval", 30*time.Second, "how often the alert rules are evaluated (docs/operations.md, Alerts)")
	c.link.register(fs)
	c.ops.register(fs)
	c.console.register(fs)
	return fs
}

func parseFlags(args []string) (Config, error) { return parseSettings(os.Stdout, args, nil) }

// parseSettings is parseFlags reading the environment through lookup (os.LookupEnv when
// nil) and writing --print-config's output to w.
func parseSettings(w io.Writer, args []string, lookup func(string) (string, bool)) (Config, error) {
	var c Config
	if err := flagenv.ParseTo(w, flagSet(&c), args, "GATEWAY_", lookup); err != nil {
		return c, err
	}
	switch {
	case c.databaseURL.Reveal() == "":
		return c, errors.New("--database-url (GATEWAY_DATABASE_URL) is required")
	case c.retentionDays < 1:
		return c, errors.New("--retention-days must be at least 1")
	case c.seriesDays < 1:
		return c, errors.New("--series-retention-days must be at least 1")
	case c.alertInterval < time.Second:
		return c, errors.New("--alert-interval must be at least 1s (a duration such as 30s or 2m)")
	case c.serviceLimits.ReadsPerSecond <= 0 || c.serviceLimits.ReadBurst < 1 ||
		c.serviceLimits.TopupsPerMinute < 1 || c.serviceLimits.CheckoutsPerHour < 1:
		return c, errors.New("--service-reads-per-second, --service-read-burst, --service-topups-per-minute and --service-checkouts-per-hour must be positive")
	}
	var err error
	if c.regionURLs, err = snapshot.ParseRegionURLs(c.regionURLsFlag); err != nil {
		return c, fmt.Errorf("--region-urls: %w", err)
	}
	return c, c.link.resolve(&c)
}

// Main runs the controlplane command with its arguments (args) and exits the process
// with its status.
func Main(args []string) {
	daemon.Main("controlplane", args, parseFlags, func(c Config) string { return c.logLevel }, run)
}

func run(ctx context.Context, cfg Config, log *slog.Logger) error {
	p := &plane{cfg: cfg, log: log, metrics: opsmetrics.New()}
	defer p.close()
	for _, step := range []func(context.Context) error{p.openStore, p.newPublisher, p.newRetention, p.newAlerts, p.newHandlers} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return p.serve(ctx)
}

// addIntegrations mounts the signup form, its admin review and the payment paths when
// their settings are given.
func addIntegrations(a *api.Config, cfg Config, st *store.Store, metrics *opsmetrics.Metrics, log *slog.Logger) error {
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
	if cfg.stripeSecretKey.Reveal() != "" {
		h, err := payments.NewTopup(payments.TopupConfig{SecretKey: cfg.stripeSecretKey.Reveal(), APIBase: cfg.stripeAPIBase, Sessions: st,
			SuccessURL: cfg.topupSuccessURL, CancelURL: cfg.topupCancelURL, Logger: log, OnSession: metrics.TopupSession})
		if err != nil {
			return err
		}
		a.Topup = h
	}
	if cfg.stripeWebhookSecret.Reveal() != "" {
		h, err := payments.NewWebhook(payments.WebhookConfig{Secret: cfg.stripeWebhookSecret.Reveal(), SecretKey: cfg.stripeSecretKey.Reveal(), Ledger: st, Logger: log, OnEvent: metrics.WebhookEvent})
		if err != nil {
			return err
		}
		a.Webhook = h
	}
	return nil
}
