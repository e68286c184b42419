// Package syncclient keeps a data-plane node's snapshot current: it long-polls the control
// plane for new snapshots, verifies and indexes each one, swaps it in atomically and writes it
// to disk as last-known-good, so a restarted node serves while the control plane is away.
//
// Every snapshot, from the wire or from disk, must carry the control plane's ed25519
// signature (Config.PublicKey) over its version, times and content hash; a tampered,
// truncated or unsigned one is refused with an error log and the node keeps what it had, or
// stays not-ready. A disk snapshot issued longer than Config.MaxAge ago is not served. Polls
// send the version, the structure hash and the issue time the node holds, so the control
// plane corrects a node holding a stale or foreign file at the current version.
//
// A node with Config.Country states it in its polls and gets the snapshot the control plane
// filtered for that country; it refuses (error log, keeps what it had) any snapshot built
// for another country, or the unfiltered one. A node without a country gets and accepts
// only the unfiltered snapshot.
package syncclient

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sekgate/gateway/dataplane/cplink"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

// DefaultMaxAge is the default Config.MaxAge.
const DefaultMaxAge = 24 * time.Hour

// FileName is the name of the last-known-good snapshot file in the data directory.
const FileName = "snapshot.json"

// maxSnapshotBytes bounds the size of a snapshot read from the wire or disk.
const maxSnapshotBytes = 256 << 20

// Config configures a Client.
type Config struct {
	// Link is the node's link to the control plane: its address, the node's credentials,
	// the transport and the backoff between failed polls (required).
	Link *cplink.Client
	// DataDir holds the last-known-good snapshot; empty disables the disk cache.
	DataDir string
	// Store receives each applied index, required.
	Store *index.Store
	// CacheSaltKey keys the accounts' cache salts in each index (index.SaltKey; nil: an
	// empty key, for tests).
	CacheSaltKey []byte
	// Build, when set, builds each snapshot's index instead of index.BuildKeyed with
	// CacheSaltKey (the node's expands discovered routes into their replicas).
	Build func(*snapshot.Snapshot) (*index.Index, error)
	// OnSnapshot, when set, is called after a snapshot was swapped in (from disk or the
	// control plane), e.g. to seed balances. It must not modify the snapshot.
	OnSnapshot func(*snapshot.Snapshot)
	// OnApplyError, when set, is called with each snapshot the node refuses (malformed,
	// failed verification, too old, built for another country) (metrics).
	OnApplyError func(error)
	// Wait is the long-poll wait the node asks for (default 30s).
	Wait time.Duration
	// PublicKey verifies the control plane's snapshot signatures. Required unless
	// AllowUnsigned, which accepts snapshots without a valid signature (insecure).
	PublicKey     ed25519.PublicKey
	AllowUnsigned bool
	// Country is the node's ISO 3166-1 alpha-2 code (upper case); empty: no country, the
	// unfiltered snapshot. Only snapshots built for exactly this country are installed.
	Country string
	// Region is the node's region name (--region), reported in polls for gatewayctl nodes
	// list; empty: none.
	Region string
	// SpoolAge, when set, returns the age of the oldest record in the node's usage spool,
	// reported in every poll (internalapi.HeaderSpoolAge) for gatewayctl nodes list.
	SpoolAge func() time.Duration
	// Breakers, when set, returns the routes whose circuit breaker is not closed (route ID
	// to state), reported in every poll (internalapi.HeaderBreakers) for the console.
	Breakers func() map[string]string
	// RouteProblems, when set, returns the routes this node cannot use because of their
	// configuration (route ID to problem), and Credentials the names of the route
	// credentials it has; both are reported in every poll for the operator.
	RouteProblems func() map[string]string
	Credentials   func() []string
	// MaxAge is the oldest (by signed issue time) disk snapshot the node serves while the
	// control plane has not answered yet (default 24h; negative: no limit).
	MaxAge time.Duration
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Client polls the control plane and applies snapshots.
type Client struct {
	cfg     Config
	pollURL string
	http    *http.Client // the link's, timing out 15 s after the long poll's wait
	log     *slog.Logger

	mu         sync.Mutex
	held       held               // what is installed
	cancelPoll context.CancelFunc // ends the poll in progress (Wake)
}

// held describes the installed snapshot for polls and the max-age check.
type held struct {
	version    int64
	structHash string
	issuedAt   time.Time
	fromDisk   bool // not yet confirmed by the control plane
}

// New validates cfg, fills defaults and returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.Link == nil || cfg.Store == nil {
		return nil, errors.New("syncclient: Link and Store are required")
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 30 * time.Second
	}
	if cfg.PublicKey == nil && !cfg.AllowUnsigned {
		return nil, errors.New("syncclient: PublicKey is required (or AllowUnsigned)")
	}
	if cfg.PublicKey != nil && len(cfg.PublicKey) != ed25519.PublicKeySize {
		return nil, errors.New("syncclient: PublicKey is not an ed25519 public key")
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Client{cfg: cfg, pollURL: cfg.Link.URL(internalapi.PathSnapshot), http: cfg.Link.HTTPClient(cfg.Wait + 15*time.Second),
		log: cfg.Logger}, nil
}

// Run polls until ctx ends, backing off after failures. It returns ctx's error.
func (c *Client) Run(ctx context.Context) error {
	failures := 0
	for {
		pctx, cancel := context.WithCancel(ctx)
		c.mu.Lock()
		c.cancelPoll = cancel
		c.mu.Unlock()
		err := c.Poll(pctx)
		woken := pctx.Err() != nil && ctx.Err() == nil
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil || woken {
			failures = 0
			continue
		}
		failures++
		c.expireDisk()
		d := c.cfg.Link.Backoff(failures-1, nil)
		c.log.Warn("snapshot poll failed", "err", err, "failures", failures, "retry_in", d)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Wake ends the long poll in progress, so that the next one, which starts at once, reports
// the node's state as it is now (a route problem found, say) rather than when the poll
// began.
func (c *Client) Wake() {
	c.mu.Lock()
	cancel := c.cancelPoll
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// ErrStatus is returned for unexpected control plane answers.
var ErrStatus = errors.New("syncclient: unexpected status")

// Poll performs one long poll and applies the snapshot it returns, if any.
func (c *Client) Poll(ctx context.Context) error {
	h := c.holding()
	q := url.Values{}
	q.Set("have", strconv.FormatInt(h.version, 10))
	if h.structHash != "" {
		q.Set("hash", h.structHash)
		q.Set("issued", strconv.FormatInt(max(h.issuedAt.UnixNano(), 0), 10))
	}
	if c.cfg.Country != "" {
		q.Set("country", c.cfg.Country)
	}
	if c.cfg.Region != "" {
		q.Set("region", c.cfg.Region)
	}
	q.Set("wait", strconv.Itoa(int(c.cfg.Wait/time.Second)))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.pollURL+"?"+q.Encode(), nil)
	if err != nil {
		return fmt.Errorf("build snapshot poll: %w", err)
	}
	c.cfg.Link.Authorize(req.Header)
	req.Header.Set("Accept", "application/json")
	if c.cfg.SpoolAge != nil {
		req.Header.Set(internalapi.HeaderSpoolAge, internalapi.FormatSpoolAge(c.cfg.SpoolAge()))
	}
	if c.cfg.Breakers != nil {
		req.Header.Set(internalapi.HeaderBreakers, internalapi.FormatBreakers(c.cfg.Breakers()))
	}
	if c.cfg.RouteProblems != nil {
		req.Header.Set(internalapi.HeaderRouteProblems, internalapi.FormatRouteProblems(c.cfg.RouteProblems()))
	}
	if c.cfg.Credentials != nil {
		req.Header.Set(internalapi.HeaderCredentials, internalapi.FormatCredentials(c.cfg.Credentials()))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("snapshot poll: %w", err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	switch resp.StatusCode {
	case http.StatusNotModified:
		c.confirm()
		return nil
	case http.StatusOK:
	default:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%w %d: %s", ErrStatus, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	s, err := decode(resp.Body)
	if err != nil {
		c.log.Error("refusing snapshot from the control plane: truncated or malformed", "err", err)
		return c.applyFailed(fmt.Errorf("decode snapshot: %w", err))
	}
	return c.Apply(s)
}

// Apply verifies, indexes and installs s, then saves it as last-known-good. A snapshot that
// fails verification leaves the current one in place.
func (c *Client) Apply(s *snapshot.Snapshot) error {
	// A current snapshot is never older than the control plane's re-issue interval: one
	// older than MaxAge is a replay (or a misconfigured re-issue interval).
	if age := s.Age(c.cfg.Now()); c.cfg.MaxAge > 0 && age > c.cfg.MaxAge && c.verify(s) == nil {
		c.log.Error("refusing snapshot from the control plane: issued longer ago than --snapshot-max-age (a replay, or --snapshot-reissue-interval is not under it)",
			"version", s.Version, "issued_at", s.IssuedAt, "age", age.Round(time.Second), "max_age", c.cfg.MaxAge)
		return c.applyFailed(fmt.Errorf("apply snapshot %d: %w: issued %s ago", s.Version, ErrTooOld, age.Round(time.Second)))
	}
	if err := c.install(s, false); err != nil {
		c.log.Error("refusing snapshot from the control plane", "version", s.Version, "err", err)
		return c.applyFailed(fmt.Errorf("apply snapshot %d: %w", s.Version, err))
	}
	c.log.Info("snapshot applied", "version", s.Version, "issued_at", s.IssuedAt, "accounts", len(s.Accounts), "models", len(s.Models), "routes", len(s.Routes))
	if err := c.save(s); err != nil {
		// Serving goes on; only a restart without the control plane would suffer.
		c.log.Error("save last-known-good snapshot", "version", s.Version, "err", err)
	}
	return nil
}

// applyFailed reports a refused snapshot to OnApplyError and returns err.
func (c *Client) applyFailed(err error) error {
	if c.cfg.OnApplyError != nil {
		c.cfg.OnApplyError(err)
	}
	return err
}

// verify checks the content hash and, unless unsigned snapshots are allowed, the signature.
func (c *Client) verify(s *snapshot.Snapshot) error {
	if c.cfg.PublicKey == nil {
		return s.Verify()
	}
	return s.VerifySigned(c.cfg.PublicKey)
}

// ErrCountry means a snapshot was built for another country than the node's.
var ErrCountry = errors.New("syncclient: snapshot built for another country")

func (c *Client) install(s *snapshot.Snapshot, fromDisk bool) error {
	if err := c.verify(s); err != nil {
		return err
	}
	if s.Country != c.cfg.Country {
		return fmt.Errorf("%w: built for %q, this node's --country is %q", ErrCountry, s.Country, c.cfg.Country)
	}
	sh, err := snapshot.StructureHash(&s.Content)
	if err != nil {
		return err
	}
	build := c.cfg.Build
	if build == nil {
		build = func(s *snapshot.Snapshot) (*index.Index, error) { return index.BuildKeyed(s, c.cfg.CacheSaltKey) }
	}
	x, err := build(s)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.cfg.Store.Swap(x)
	c.held = held{version: s.Version, structHash: sh, issuedAt: s.IssuedAt, fromDisk: fromDisk}
	c.mu.Unlock()
	if c.cfg.OnSnapshot != nil {
		c.cfg.OnSnapshot(s)
	}
	return nil
}

func (c *Client) holding() held {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}

// confirm records that the control plane answered "current" for what is installed.
func (c *Client) confirm() {
	c.mu.Lock()
	c.held.fromDisk = false
	c.mu.Unlock()
}

func decode(r io.Reader) (*snapshot.Snapshot, error) {
	var s snapshot.Snapshot
	dec := json.NewDecoder(io.LimitReader(r, maxSnapshotBytes))
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	return &s, nil
}
