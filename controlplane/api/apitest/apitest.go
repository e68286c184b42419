// Package apitest builds the control plane's API handlers on a store of their own, for the
// tests of what stands in front of the admin API (the console, gatewayctl).
package apitest

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/api"
	"github.com/sekgate/gateway/controlplane/publish"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/controlplane/store/storetest"
)

// NodeToken is the one node token the handlers accept.
const NodeToken = "node-token-0123456789abcdef0123456789"

// New returns the API handlers with adminToken on a fresh migrated store (closed when the
// test ends) and a snapshot publisher (20 ms debounce), with the store.
func New(t testing.TB, adminToken string) (*api.Handlers, *store.Store) {
	t.Helper()
	return NewWith(t, adminToken, nil)
}

// NewWith is New with the API's config changed by opt (nil: unchanged).
func NewWith(t testing.TB, adminToken string, opt func(*api.Config)) (*api.Handlers, *store.Store) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, _ := storetest.Open(t, store.Config{Logger: quiet})
	pub, err := publish.New(publish.Config{Store: st, Logger: quiet, Debounce: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cfg := api.Config{Store: st, Snapshots: pub, AdminToken: adminToken, NodeTokens: []string{NodeToken}, Logger: quiet}
	if opt != nil {
		opt(&cfg)
	}
	h, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h, st
}
