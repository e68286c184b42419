// Package routecheck finds, on one node, the routes it cannot use because of their
// configuration (a credential the node lacks, a server it cannot reach, a TLS failure, a
// server refusing its credential), logs each once, and reports them to the control plane
// with the snapshot poll. It also owns the node's route credentials, which it re-reads
// without a restart.
package routecheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/sekgate/gateway/shared/snapshot"
)

// Credentials are the node's route credentials: the GATEWAY_CREDENTIAL_* variables of its
// environment, and those of an optional file of NAME=VALUE lines, which wins and is read
// again when it changes (Reload), so a credential can be added without a restart.
type Credentials struct {
	file    string
	getenv  func(string) string
	environ func() []string

	mu       sync.RWMutex
	fromFile map[string]string
	stamp    string // the file's size and modification time when last read
}

// NewCredentials reads file (empty: none) and returns the node's credentials; getenv and
// environ read the process's environment when nil (os.Getenv, os.Environ).
func NewCredentials(file string, getenv func(string) string, environ func() []string) (*Credentials, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if environ == nil {
		environ = os.Environ
	}
	c := &Credentials{file: file, getenv: getenv, environ: environ}
	if _, err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Get returns the credential variable name's value ("" when the node has none).
func (c *Credentials) Get(name string) string {
	c.mu.RLock()
	v, ok := c.fromFile[name]
	c.mu.RUnlock()
	if ok {
		return v
	}
	return c.getenv(name)
}

// Names returns the names of the credentials the node has, sorted.
func (c *Credentials) Names() []string {
	set := map[string]bool{}
	for _, kv := range c.environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" && strings.HasPrefix(k, snapshot.CredentialEnvPrefix) {
			set[k] = true
		}
	}
	c.mu.RLock()
	for k, v := range c.fromFile {
		if v != "" {
			set[k] = true
		}
	}
	c.mu.RUnlock()
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Reload reads the file again when its size or modification time changed, and reports
// whether the credentials changed. A file that cannot be read or parsed leaves the
// credentials as they were.
func (c *Credentials) Reload() (bool, error) {
	if c.file == "" {
		return false, nil
	}
	fi, err := os.Stat(c.file)
	if err != nil {
		return false, fmt.Errorf("credentials file: %w", err)
	}
	stamp := fmt.Sprint(fi.Size(), fi.ModTime().UnixNano())
	c.mu.RLock()
	same := stamp == c.stamp
	c.mu.RUnlock()
	if same {
		return false, nil
	}
	b, err := os.ReadFile(c.file)
	if err != nil {
		return false, fmt.Errorf("credentials file: %w", err)
	}
	m, err := parseFile(b)
	if err != nil {
		return false, fmt.Errorf("credentials file %s: %w", c.file, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := len(m) != len(c.fromFile)
	for k, v := range m {
		if c.fromFile[k] != v {
			changed = true
		}
	}
	c.fromFile, c.stamp = m, stamp
	return changed, nil
}

// parseFile reads NAME=VALUE lines (blank lines and # comments skipped); every name must
// be a route credential's variable.
func parseFile(b []byte) (map[string]string, error) {
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(strings.TrimPrefix(k, "export "))
		if !ok {
			return nil, fmt.Errorf("line %d: want NAME=VALUE", n)
		}
		if _, err := snapshot.ParseCredentialsRef("env:" + k); err != nil {
			return nil, fmt.Errorf("line %d: %s is not a route credential (%s*)", n, k, snapshot.CredentialEnvPrefix)
		}
		m[k] = strings.Trim(strings.TrimSpace(v), `"'`)
	}
	return m, sc.Err()
}
