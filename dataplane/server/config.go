package server

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fasthttp/router"

	"github.com/sekgate/gateway/dataplane/accesslog"
	"github.com/sekgate/gateway/dataplane/admit"
	"github.com/sekgate/gateway/dataplane/attempt"
	"github.com/sekgate/gateway/dataplane/baseurl"
	"github.com/sekgate/gateway/dataplane/cplink"
	"github.com/sekgate/gateway/dataplane/edge"
	"github.com/sekgate/gateway/dataplane/fairq"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/limits"
	"github.com/sekgate/gateway/dataplane/loadstat"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/dataplane/settle"
	"github.com/sekgate/gateway/dataplane/telemetry"
	"github.com/sekgate/gateway/dataplane/tracing"
	"github.com/sekgate/gateway/internal/flagenv"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/residency"
)

// Meter is what the stages need of metering (dataplane/meter; dataplane/memmeter in
// memory): it takes the records (settle.Meter) and knows the balances (admit.Balances);
// one that can hold part of a balance (admit.Holder) holds requests' maximum prices.
type Meter interface {
	settle.Meter
	admit.Balances
}

// Config configures a Server.
// Settings are the edge's settings, each a flag of the dataplane command (dataplane/node
// binds them with flagenv.Bind, and docs/configuration.md lists them); a Server built in
// code gets the same defaults (flagenv.Defaults). A negative number turns its cap off.
type Settings struct {
	// HeaderTimeout bounds reading a request's headers, from its first byte (on a new
	// connection: from the accept).
	HeaderTimeout time.Duration `flag:"header-timeout" default:"10s" help:"longest time to receive a request's line and headers"`
	// BodyIdleTimeout bounds each wait for request body bytes, and the wait for a body of
	// up to 8 KiB (the first byte of a longer one) after its headers.
	BodyIdleTimeout time.Duration `flag:"body-idle-timeout" default:"10s" help:"longest wait for request body bytes"`
	// MinBodyRate is the lowest average rate, in bytes per second, at which a request body
	// may arrive once it has taken longer than BodyIdleTimeout (negative: off).
	MinBodyRate int `flag:"min-body-rate" default:"4096" help:"lowest request-body rate in bytes/s past --body-idle-timeout (negative: off)"`
	// IdleTimeout bounds keep-alive idleness between requests.
	IdleTimeout time.Duration `flag:"keepalive-timeout" default:"60s" help:"longest idle time of a keep-alive client connection between requests"`
	// WriteTimeout bounds every single write to a client, stream flushes included: a client
	// that stops reading is cut and its upstream request cancelled.
	WriteTimeout time.Duration `flag:"write-timeout" default:"30s" help:"longest wait of one write to a client; a client that stops reading is cut"`
	// MaxHeaderBytes bounds a request's line and headers; larger ones get 431.
	MaxHeaderBytes int `flag:"max-header-bytes" default:"8192" help:"largest request line plus headers; larger requests get 431"`
	// MaxConns caps open client connections in total; MaxConnsPerAddr the connections per
	// client address (IPv4 address or IPv6 /64; trusted proxies exempt) that have not yet
	// presented a valid key. Over a cap a connection is answered 503 or 429 and closed (negative: no cap). A connection whose request authenticated
	// counts against its account instead: MaxConnsPerAccount (negative: no cap), and the account's request limits (limits.Limiter).
	MaxConns           int `flag:"max-conns" default:"10000" help:"open client connections in total; more are answered 503 and closed (negative: no cap)"`
	MaxConnsPerAddr    int `flag:"max-conns-per-addr" default:"100" help:"open connections per client address before authentication (negative: no cap)"`
	MaxConnsPerAccount int `flag:"max-conns-per-account" default:"1000" help:"open connections per account once they presented a valid key (negative: no cap)"`
	// MaxAttempts bounds the routes one request tries before its first byte.
	MaxAttempts int `flag:"max-attempts" default:"3" help:"routes one request tries before its first byte reaches the client"`
	// RequestTimeout bounds a request from routing to its last byte, failover and streams
	// included; single attempts are bounded by their route's timeouts too.
	RequestTimeout time.Duration `flag:"request-timeout" default:"10m" help:"total deadline of one request, failover and streaming included"`
	// DocsURL is the public reference: the target of GET /docs and the documentation_url of
	// endpoint_not_supported errors (empty: the reference this gateway renders).
	DocsURL string `flag:"docs-url" help:"public reference GET /docs redirects to (default: the reference this gateway renders)"`
	// PublicURL is the base URL clients use to reach the gateway (e.g. https://api.example.com,
	// behind a proxy or load balancer): named in hints, in openapi.json's servers and in
	// the /docs and 501 links (default: the address of the socket a client connected to;
	// hints then use the request's Host).
	PublicURL string `flag:"public-url" help:"base URL clients reach the gateway at, named in hints, openapi.json and links"`
}

type Config struct {
	// Settings are the edge's settings (flags of the dataplane command).
	Settings
	// Store holds the current snapshot index (required). An empty store means not ready.
	Store *index.Store
	// Meter admits and records requests (required).
	Meter Meter
	// Telemetry receives the request, admission and upstream figures (dataplane/telemetry);
	// default: a private registry nobody serves.
	Telemetry *telemetry.Metrics
	// AccessLog, when set, gets one line per inference request (dataplane/accesslog).
	AccessLog *accesslog.Log
	// Tracer, when set, traces inference requests (dataplane/tracing).
	Tracer *tracing.Tracer
	// Pool forwards to upstreams (default: proxy.NewPool with defaults).
	Pool *proxy.Pool
	// Selector orders eligible routes: priority, then each model's routing policy (default:
	// a Selector with a fresh load registry; without Loads, weighted random).
	Selector *routing.Selector
	// FairQueue, when set, holds requests while every eligible route is saturated, in
	// per-account turns (dataplane/fairq); nil: requests go to the servers' own queues.
	FairQueue *fairq.Queue
	// Refusals, when set, counts the requests refused after authentication and before
	// routing (no record is made for them), for the operator (dataplane/refusals).
	Refusals RefusalCounter
	// Health holds the per-route circuit breakers (default: routing.NewHealth defaults:
	// open after 5 consecutive failures or half of >= 20 attempts in 30s, probe after 10s).
	Health *routing.Health
	// Limiter enforces per-key and per-account rate and concurrency limits (default: the
	// full limits of the snapshot, limits.New with ShareNodes 1 and no fleet shares).
	Limiter *limits.Limiter
	// DisableClientWatch turns off watching the client's connection for a disconnect while
	// the upstream works (then a disconnect is noticed at the next write to the client).
	DisableClientWatch bool
	// ClientWatchDelay is how long a request waits on its upstream before its client's
	// connection is watched (default 20ms; negative: at once). A request answered sooner
	// never pays for a watch; a client leaving earlier is noticed at most this late.
	ClientWatchDelay time.Duration
	// Link is the node's link to its control plane (address, TLS, node credentials), over
	// which /v1/service/* and /v1/stripe/webhook are forwarded; without it those paths
	// answer 503.
	Link *cplink.Client
	// TestBoxToken is the console test box's own token (not the node token), admitted only
	// on the private listener of ServeTestBox (testbox.go); empty: no test box.
	TestBoxToken string
	// Register, when set, adds routes (e.g. /openapi.json, /docs) before the server starts.
	Register func(r *router.Router)
	// AddrWait is how long a new connection over MaxConnsPerAddr waits, unread, for a place
	// of its address (another of its connections authenticating or closing) before it is
	// refused, so that a client opening many connections at once is served once its first
	// ones authenticate (default 2s; negative: refused at once). At most 10 times
	// MaxConnsPerAddr wait per address.
	AddrWait time.Duration
	// TrustedProxies are the proxies whose X-Forwarded-For names the client (default none:
	// the TCP peer is the client).
	TrustedProxies *edge.Proxies
	// Country is the ISO 3166-1 alpha-2 code of where this node runs: accounts whose
	// residency policy does not admit it are refused with 403 residency_unsatisfiable
	// (default empty: the node admits every account and residency is kept by route choice).
	Country string
	// Region is the operator's name for where this node runs (e.g. "se-sto"): lower-case
	// letters, digits and '-', at most 63; recorded as node_region in every request's
	// routing (default empty: not recorded).
	Region string
	// RegionURLs maps a residency policy (se, eu, any) to the base URL of the region that
	// serves it: the documentation_url of this node's residency refusals. An entry here
	// overrides the snapshot's (the control plane's --region-urls) for its policy.
	RegionURLs map[string]string
	// Concurrency caps concurrent connections (default 256k).
	Concurrency int
	Logger      *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// fill sets the defaults of the settings left unset and checks the rest.
func (c *Config) fill() error {
	if c.Store == nil || c.Meter == nil {
		return errors.New("server: Store and Meter are required")
	}
	if c.Pool == nil {
		c.Pool = proxy.NewPool(proxy.Config{})
	}
	if c.Selector == nil {
		c.Selector = &routing.Selector{Loads: loadstat.NewRegistry()}
	}
	flagenv.MustDefaults(&c.Settings)
	if c.AddrWait == 0 {
		c.AddrWait = 2 * time.Second
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 256 * 1024
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Health == nil {
		c.Health = routing.NewHealth(routing.HealthConfig{Logger: c.Logger})
	}
	if c.Limiter == nil {
		c.Limiter = limits.New(limits.Config{Now: c.Now})
	}
	if c.ClientWatchDelay == 0 {
		c.ClientWatchDelay = attempt.DefaultClientWatchDelay
	} else if c.ClientWatchDelay < 0 {
		c.ClientWatchDelay = 0
	}
	if c.Telemetry == nil {
		c.Telemetry = telemetry.New()
	}
	return c.check()
}

// check validates the settings.
func (c *Config) check() error {
	if c.MaxAttempts < 1 || c.RequestTimeout <= 0 {
		return errors.New("server: MaxAttempts must be at least 1 and RequestTimeout positive")
	}
	if c.PublicURL != "" {
		u, err := baseurl.Parse(c.PublicURL)
		if err != nil {
			return fmt.Errorf("server: PublicURL %q: %w", c.PublicURL, err)
		}
		c.PublicURL = u
	}
	if !residency.ValidCountry(c.Country) {
		return fmt.Errorf("server: Country %q is not an upper-case ISO 3166-1 alpha-2 country code", c.Country)
	}
	if !internalapi.ValidRegion(c.Region) {
		return fmt.Errorf("server: Region %q is not lower-case letters, digits and '-' (at most 63)", c.Region)
	}
	return nil
}
