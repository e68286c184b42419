package routecheck

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Config configures a Checker.
type Config struct {
	// Routes returns the routes of the snapshot the node serves (nil before it has one).
	Routes func() []snapshot.Route
	// Credentials are the node's route credentials.
	Credentials *Credentials
	// Client probes the routes' servers (default: 3 s timeout, the system's roots).
	Client *http.Client
	// Interval is how often every route is checked again and the credentials file looked
	// at (default 30 s).
	Interval time.Duration
	// OnProblemsChanged is called when the set of route problems changed, so the node can
	// report it at once (a new snapshot poll).
	OnProblemsChanged func()
	// OnCredentialsChanged is called when the credentials file changed, so upstreams
	// resolve their credentials again (proxy.Pool.Refresh).
	OnCredentialsChanged func()
	Logger               *slog.Logger
}

// Checker keeps the node's current route problems.
type Checker struct {
	cfg      Config
	problems atomic.Pointer[map[string]string]
	wake     chan struct{}

	mu     sync.Mutex
	logged map[string]string // route → problem last logged
}

// New returns a Checker; Run starts it.
func New(cfg Config) *Checker {
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 3 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Checker{cfg: cfg, wake: make(chan struct{}, 1), logged: map[string]string{}}
	empty := map[string]string{}
	c.problems.Store(&empty)
	return c
}

// Problems returns the routes this node cannot use, route ID to problem
// (internalapi.Problem*). The map must not be changed.
func (c *Checker) Problems() map[string]string { return *c.problems.Load() }

// Trigger asks for a check soon (a new snapshot was applied, or SIGHUP).
func (c *Checker) Trigger() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Run checks the routes at once, then on every Trigger and Interval, until ctx ends.
func (c *Checker) Run(ctx context.Context) {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		c.CheckNow(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.wake:
		}
	}
}

// CheckNow reads the credentials file again if it changed and checks every route once.
func (c *Checker) CheckNow(ctx context.Context) {
	if c.cfg.Credentials != nil {
		changed, err := c.cfg.Credentials.Reload()
		if err != nil {
			c.cfg.Logger.Error("route credentials not reloaded", "err", err)
		}
		if changed {
			c.cfg.Logger.Info("route credentials reloaded", "names", strings.Join(c.cfg.Credentials.Names(), ","))
			if c.cfg.OnCredentialsChanged != nil {
				c.cfg.OnCredentialsChanged()
			}
		}
	}
	var routes []snapshot.Route
	if c.cfg.Routes != nil {
		routes = c.cfg.Routes()
	}
	found := map[string]string{}
	probed := map[string]string{} // base URL and credential → problem, so shared servers are probed once
	for i := range routes {
		r := &routes[i]
		if p := c.check(ctx, r, probed); p != "" {
			found[r.ID] = p
		}
	}
	old := c.Problems()
	c.logChanges(routes, found)
	if !maps.Equal(old, found) {
		c.problems.Store(&found)
		if c.cfg.OnProblemsChanged != nil {
			c.cfg.OnProblemsChanged()
		}
	}
}

// check returns route r's problem, or "".
func (c *Checker) check(ctx context.Context, r *snapshot.Route, probed map[string]string) string {
	name, err := snapshot.ParseCredentialsRef(r.CredentialsRef)
	if err != nil {
		return internalapi.ProblemCredentialMissing
	}
	secret := ""
	if name != "" {
		if c.cfg.Credentials != nil {
			secret = c.cfg.Credentials.Get(name)
		}
		if secret == "" {
			return internalapi.ProblemCredentialMissing
		}
	}
	key := r.BaseURL + "\x00" + name
	if p, ok := probed[key]; ok {
		return p
	}
	p := c.probe(ctx, r.BaseURL, secret)
	probed[key] = p
	return p
}

// probe asks the server for its model list (GET {base_url}/models, which every supported
// server answers) and names what keeps the node from using it: no connection, a failed
// TLS handshake, or a refused credential. Any other answer, an error status included, is
// the server's business, not the route's configuration.
func (c *Checker) probe(ctx context.Context, baseURL, secret string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(baseURL, "/")+"/models", nil)
	if err != nil {
		return internalapi.ProblemUnreachable
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	resp, err := c.cfg.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ""
		}
		var certErr *tls.CertificateVerificationError
		var unknownCA x509.UnknownAuthorityError
		var hostErr x509.HostnameError
		var recordErr tls.RecordHeaderError
		if errors.As(err, &certErr) || errors.As(err, &unknownCA) || errors.As(err, &hostErr) || errors.As(err, &recordErr) {
			return internalapi.ProblemTLS
		}
		return internalapi.ProblemUnreachable // refused, reset, timed out, no such host
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return internalapi.ProblemUnauthorized
	}
	return ""
}

// logChanges logs each route's problem once when it appears, naming the credential's
// variable where that is the problem, and once when it is gone.
func (c *Checker) logChanges(routes []snapshot.Route, found map[string]string) {
	refs := make(map[string]string, len(routes))
	for _, r := range routes {
		refs[r.ID] = r.CredentialsRef
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, p := range found {
		if c.logged[id] == p {
			continue
		}
		c.logged[id] = p
		switch p {
		case internalapi.ProblemCredentialMissing:
			name, _ := snapshot.ParseCredentialsRef(refs[id])
			c.cfg.Logger.Error("route unusable: its credential is not set on this node; add it to the environment or the --credentials-file",
				"route", id, "variable", name)
		default:
			c.cfg.Logger.Error("route unusable: "+describe(p), "route", id, "problem", p)
		}
	}
	for id := range c.logged {
		if _, ok := found[id]; !ok {
			delete(c.logged, id)
			c.cfg.Logger.Info("route usable again", "route", id)
		}
	}
}

func describe(p string) string {
	switch p {
	case internalapi.ProblemUnreachable:
		return "its server cannot be reached"
	case internalapi.ProblemTLS:
		return "the TLS handshake with its server fails"
	case internalapi.ProblemUnauthorized:
		return "its server refuses this node's credential"
	}
	return p
}
