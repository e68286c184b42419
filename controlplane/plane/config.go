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
	"github.com/sekgate/gateway/controlplane/signup"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/internal/daemon"
	"github.com/sekgate/gateway/internal/flagenv"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Config is the control plane's settings, declared once: each tagged field is a flag
// (flagenv.Bind), also read from GATEWAY_<NAME> and from the --config file, and a line of
// docs/configuration.md.
type Config struct {
	// Listeners and credentials.
	Listen          string            `flag:"listen" default:"127.0.0.1:8081" help:"address of the node-facing listener (internal API and forwarded customer paths)"`
	AdminToken      flagenv.Secret    `flag:"admin-token" help:"bearer token of the admin API, at least 32 bytes (or --admin-token-file)"`
	NodeTokens      flagenv.Secret    `flag:"node-tokens" help:"comma-separated node bearer tokens, each ≥ 32 bytes (or --node-tokens-file)"`
	Link            linkConfig        // admin listener, token files, signing, TLS
	Ops             opsConfig         // private metrics and probes listener
	Console         consoleConfig     // operator console and its test box
	OIDC            oidcConfig        // console sign-in through an OIDC provider
	LogLevel        string            `flag:"log-level" default:"info" help:"log level: debug, info, warn or error"`
	RegionURLsFlag  string            `flag:"region-urls" help:"policy=base URL pairs of the regions serving each residency policy"`
	StartFeedListen string            `flag:"start-feed-listen" help:"private address of a NATS server for the nodes' --start-feed-url (empty: off)"`
	regionURLs      map[string]string // RegionURLsFlag, parsed
	// Postgres.
	DatabaseURL        flagenv.DSN `flag:"database-url" help:"Postgres connection URL of the runtime role, a member of gateway_runtime (required)"`
	MigrateDatabaseURL flagenv.DSN `flag:"migrate-database-url" help:"Postgres URL of the schema owner, used for migrations then closed (empty: --database-url)"`
	MaxConns           int         `flag:"max-conns" default:"10" help:"maximum Postgres connections in the pool"`
	IngestConcurrency  int         `flag:"ingest-concurrency" default:"1" help:"usage batches applied at once; the rest wait in the process (negative: no bound)"`
	RetentionDays      int         `flag:"retention-days" default:"90" help:"days request records are kept (whole day partitions are dropped)"`
	SeriesDays         int         `flag:"series-retention-days" default:"14" help:"days the per-minute series of the live service view are kept"`
	// Accounts, limits and alerts.
	DefaultLimitsFile string            `flag:"default-limits-file" help:"YAML file of request limits for accounts and keys without their own (empty: unlimited)"`
	ServiceLimits     api.ServiceLimits // /v1/service/* reads, top-ups and checkouts
	AlertInterval     time.Duration     `flag:"alert-interval" default:"30s" help:"how often the alert rules are evaluated (docs/operations.md, Alerts)"`
	// Signup.
	SignupConfirmURL string `flag:"signup-confirm-url" help:"public confirmation page of the signup form (with --signup-error-url enables signup)"`
	SignupErrorURL   string `flag:"signup-error-url" help:"public error page of the signup form"`
	SignupPerMinute  int    `flag:"signup-rate-per-minute" default:"5" help:"signup submissions allowed per client address per minute (also the burst)"`
	// Top-ups.
	StripeSecretKey     flagenv.Secret `flag:"stripe-secret-key" help:"payment provider secret key (enables /v1/service/topup with the top-up URLs)"`
	StripeAPIBase       string         `flag:"stripe-api-base" help:"payment provider API base URL (tests: a stripe-mock address)"`
	StripeWebhookSecret flagenv.Secret `flag:"stripe-webhook-secret" help:"payment webhook signing secret (enables /v1/stripe/webhook)"`
	TopupSuccessURL     string         `flag:"topup-success-url" help:"where checkout sends the customer after paying"`
	TopupCancelURL      string         `flag:"topup-cancel-url" help:"where checkout sends the customer after cancelling"`
}

// FlagSet returns the control plane's settings as flags with their defaults, unparsed
// (for the configuration reference).
func FlagSet() *flag.FlagSet {
	var c Config
	return flagSet(&c)
}

func flagSet(c *Config) *flag.FlagSet {
	fs := flag.NewFlagSet("controlplane", flag.ContinueOnError)
	if err := flagenv.Bind(fs, c); err != nil {
		panic(err) // the tags are checked by TestConfigurationReference and TestFlagDefaults
	}
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
	case c.DatabaseURL.Reveal() == "":
		return c, errors.New("--database-url (GATEWAY_DATABASE_URL) is required")
	case c.RetentionDays < 1:
		return c, errors.New("--retention-days must be at least 1")
	case c.SeriesDays < 1:
		return c, errors.New("--series-retention-days must be at least 1")
	case c.AlertInterval < time.Second:
		return c, errors.New("--alert-interval must be at least 1s (a duration such as 30s or 2m)")
	case c.ServiceLimits.ReadsPerSecond <= 0 || c.ServiceLimits.ReadBurst < 1 ||
		c.ServiceLimits.TopupsPerMinute < 1 || c.ServiceLimits.CheckoutsPerHour < 1:
		return c, errors.New("--service-reads-per-second, --service-read-burst, --service-topups-per-minute and --service-checkouts-per-hour must be positive")
	}
	var err error
	if c.regionURLs, err = snapshot.ParseRegionURLs(c.RegionURLsFlag); err != nil {
		return c, fmt.Errorf("--region-urls: %w", err)
	}
	return c, c.Link.resolve(&c)
}

// Main runs the controlplane command with its arguments (args) and exits the process
// with its status.
func Main(args []string) {
	daemon.Main("controlplane", args, parseFlags, func(c Config) string { return c.LogLevel }, run)
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
	if cfg.SignupConfirmURL != "" || cfg.SignupErrorURL != "" {
		h, err := signup.NewHandler(signup.Config{Store: signups, ConfirmURL: cfg.SignupConfirmURL, ErrorURL: cfg.SignupErrorURL,
			Rate: rate.Limit(float64(cfg.SignupPerMinute) / 60), Burst: cfg.SignupPerMinute, Logger: log, OnSubmission: metrics.Signup})
		if err != nil {
			return err
		}
		a.Signup = h
	}
	if cfg.StripeSecretKey.Reveal() != "" {
		h, err := payments.NewTopup(payments.TopupConfig{SecretKey: cfg.StripeSecretKey.Reveal(), APIBase: cfg.StripeAPIBase, Sessions: st,
			SuccessURL: cfg.TopupSuccessURL, CancelURL: cfg.TopupCancelURL, Logger: log, OnSession: metrics.TopupSession})
		if err != nil {
			return err
		}
		a.Topup = h
	}
	if cfg.StripeWebhookSecret.Reveal() != "" {
		h, err := payments.NewWebhook(payments.WebhookConfig{Secret: cfg.StripeWebhookSecret.Reveal(), SecretKey: cfg.StripeSecretKey.Reveal(), Ledger: st, Logger: log, OnEvent: metrics.WebhookEvent})
		if err != nil {
			return err
		}
		a.Webhook = h
	}
	return nil
}
