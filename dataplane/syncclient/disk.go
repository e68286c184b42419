package syncclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sekgate/gateway/shared/snapshot"
)

// ErrTooOld means a snapshot was issued longer than MaxAge ago.
var ErrTooOld = errors.New("syncclient: snapshot is older than the maximum age")

// Path is the last-known-good file, or "" without a data directory.
func (c *Client) Path() string {
	if c.cfg.DataDir == "" {
		return ""
	}
	return filepath.Join(c.cfg.DataDir, FileName)
}

// LoadDisk applies the last-known-good snapshot from the data directory, if there is one.
// It returns (false, nil) when no file exists. A file that is truncated, tampered with,
// unsigned or older than MaxAge is refused (error), and the node stays not-ready until the
// control plane answers.
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
		c.log.Error("refusing last-known-good snapshot: truncated or malformed", "path", p, "err", err)
		return false, fmt.Errorf("read last-known-good snapshot %s: %w", p, err)
	}
	if err := c.verify(s); err != nil {
		c.log.Error("refusing last-known-good snapshot: it does not verify (tampered with, or signed by another key)",
			"path", p, "version", s.Version, "err", err)
		return false, fmt.Errorf("last-known-good snapshot %s: %w", p, err)
	}
	if age := s.Age(c.cfg.Now()); c.cfg.MaxAge > 0 && age > c.cfg.MaxAge {
		c.log.Error("refusing last-known-good snapshot: older than --snapshot-max-age; not ready until the control plane answers",
			"path", p, "version", s.Version, "issued_at", s.IssuedAt, "age", age.Round(1e9), "max_age", c.cfg.MaxAge)
		return false, fmt.Errorf("%w: issued %s ago", ErrTooOld, age.Round(1e9))
	}
	if err := c.install(s, true); err != nil {
		c.log.Error("refusing last-known-good snapshot", "path", p, "version", s.Version, "err", err)
		return false, fmt.Errorf("apply last-known-good snapshot: %w", err)
	}
	c.log.Info("serving last-known-good snapshot from disk", "version", s.Version, "issued_at", s.IssuedAt)
	return true, nil
}

// expireDisk unloads a disk snapshot the control plane has not confirmed once it passes
// MaxAge, so a node cut off from its control plane stops serving revoked keys eventually.
func (c *Client) expireDisk() {
	if c.cfg.MaxAge <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.held.fromDisk || c.cfg.Now().Sub(c.held.issuedAt) <= c.cfg.MaxAge {
		return
	}
	c.cfg.Store.Swap(nil)
	c.log.Error("disk snapshot passed --snapshot-max-age without the control plane answering; not ready until it does",
		"version", c.held.version, "issued_at", c.held.issuedAt, "max_age", c.cfg.MaxAge)
	c.held = held{}
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
