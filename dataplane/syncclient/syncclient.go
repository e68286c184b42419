// Package syncclient keeps a data-plane node's snapshot current: it long-polls the control
// plane for new snapshots, verifies and indexes each one, swaps it in atomically and writes it
// to disk as last-known-good, so a restarted node serves while the control plane is away.
package syncclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sekgate/gateway/dataplane/catalog"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

// FileName is the name of the last-known-good snapshot file in the data directory.
const FileName = "snapshot.json"

// maxSnapshotBytes bounds the size of a snapshot read from the wire or disk.
const maxSnapshotBytes = 256 << 20

// Config configures a Client.
type Config struct {
	// ControlPlaneURL is the control plane's base URL (scheme and host), required.
	ControlPlaneURL string
	// NodeToken authenticates the node (Authorization: Bearer), required.
	NodeToken string
	// NodeID names the node (X-Node-Id), required.
	NodeID string
	// DataDir holds the last-known-good snapshot; empty disables the disk cache.
	DataDir string
	// Store receives each applied index, required.
	Store *catalog.Store
	// OnSnapshot, when set, is called after a snapshot was swapped in (from disk or the
	// control plane), e.g. to seed balances. It must not modify the snapshot.
	OnSnapshot func(*snapshot.Snapshot)
	// Wait is the long-poll wait the node asks for (default 30s).
	Wait time.Duration
	// MinBackoff and MaxBackoff bound the delay between failed polls (defaults 200ms, 15s).
	MinBackoff, MaxBackoff time.Duration
	// HTTPClient is used for polls (default: a client whose timeout is Wait plus 15s).
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// Client polls the control plane and applies snapshots.
type Client struct {
	cfg     Config
	pollURL string
	log     *slog.Logger
}

// New validates cfg, fills defaults and returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.ControlPlaneURL == "" || cfg.NodeToken == "" || cfg.NodeID == "" || cfg.Store == nil {
		return nil, errors.New("syncclient: ControlPlaneURL, NodeToken, NodeID and Store are required")
	}
	u, err := url.Parse(strings.TrimRight(cfg.ControlPlaneURL, "/"))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("syncclient: bad control plane URL %q", cfg.ControlPlaneURL)
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 30 * time.Second
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 200 * time.Millisecond
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(15*time.Second, cfg.MinBackoff)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: cfg.Wait + 15*time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Client{cfg: cfg, pollURL: u.String() + internalapi.PathSnapshot, log: cfg.Logger}, nil
}

// Path is the last-known-good file, or "" without a data directory.
func (c *Client) Path() string {
	if c.cfg.DataDir == "" {
		return ""
	}
	return filepath.Join(c.cfg.DataDir, FileName)
}

// LoadDisk applies the last-known-good snapshot from the data directory, if there is one.
// It returns (false, nil) when no file exists.
func (c *Client) LoadDisk() (bool, error) {
	p := c.Path()
	if p == "" {
		return false, nil
	}
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open last-known-good snapshot: %w", err)
	}
	defer f.Close()
	s, err := decode(f)
	if err != nil {
		return false, fmt.Errorf("read last-known-good snapshot %s: %w", p, err)
	}
	if err := c.install(s); err != nil {
		return false, fmt.Errorf("apply last-known-good snapshot: %w", err)
	}
	c.log.Info("serving last-known-good snapshot from disk", "version", s.Version)
	return true, nil
}

// Run polls until ctx ends, backing off after failures. It returns ctx's error.
func (c *Client) Run(ctx context.Context) error {
	failures := 0
	for {
		err := c.Poll(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			failures = 0
			continue
		}
		failures++
		d := c.backoff(failures)
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

// backoff is exponential with full jitter in [d/2, d].
func (c *Client) backoff(failures int) time.Duration {
	d := c.cfg.MinBackoff
	for i := 1; i < failures && d < c.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.cfg.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}

// ErrStatus is returned for unexpected control plane answers.
var ErrStatus = errors.New("syncclient: unexpected status")

// Poll performs one long poll and applies the snapshot it returns, if any.
func (c *Client) Poll(ctx context.Context) error {
	have := int64(0)
	if x := c.cfg.Store.Load(); x != nil {
		have = x.Version()
	}
	u := c.pollURL + "?have=" + strconv.FormatInt(have, 10) + "&wait=" + strconv.Itoa(int(c.cfg.Wait/time.Second))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("build snapshot poll: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.NodeToken)
	req.Header.Set(internalapi.HeaderNodeID, c.cfg.NodeID)
	req.Header.Set("Accept", "application/json")
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("snapshot poll: %w", err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	switch resp.StatusCode {
	case http.StatusNotModified:
		return nil
	case http.StatusOK:
	default:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%w %d: %s", ErrStatus, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	s, err := decode(resp.Body)
	if err != nil {
		return fmt.Errorf("decode snapshot: %w", err)
	}
	if s.Version == have {
		return nil
	}
	if err := c.Apply(s); err != nil {
		return err
	}
	return nil
}

// Apply verifies, indexes and installs s, then saves it as last-known-good. A snapshot that
// fails verification leaves the current one in place.
func (c *Client) Apply(s *snapshot.Snapshot) error {
	if err := c.install(s); err != nil {
		return fmt.Errorf("apply snapshot %d: %w", s.Version, err)
	}
	c.log.Info("snapshot applied", "version", s.Version, "accounts", len(s.Accounts), "models", len(s.Models), "routes", len(s.Routes))
	if err := c.save(s); err != nil {
		// Serving goes on; only a restart without the control plane would suffer.
		c.log.Error("save last-known-good snapshot", "version", s.Version, "err", err)
	}
	return nil
}

func (c *Client) install(s *snapshot.Snapshot) error {
	if err := s.Verify(); err != nil {
		return err
	}
	x, err := catalog.Build(s)
	if err != nil {
		return err
	}
	c.cfg.Store.Swap(x)
	if c.cfg.OnSnapshot != nil {
		c.cfg.OnSnapshot(s)
	}
	return nil
}

func decode(r io.Reader) (*snapshot.Snapshot, error) {
	var s snapshot.Snapshot
	dec := json.NewDecoder(io.LimitReader(r, maxSnapshotBytes))
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	return &s, nil
}

// save writes s atomically: temp file in the same directory, fsync, rename, fsync the dir.
func (c *Client) save(s *snapshot.Snapshot) error {
	p := c.Path()
	if p == "" {
		return nil
	}
	if err := os.MkdirAll(c.cfg.DataDir, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(c.cfg.DataDir, FileName+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		return err
	}
	if d, err := os.Open(c.cfg.DataDir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
