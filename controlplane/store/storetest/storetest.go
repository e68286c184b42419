// Package storetest opens a migrated control-plane store on a fresh database of the test
// Postgres cluster (controlplane/pgtest), for the tests of the packages that use the store.
package storetest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/controlplane/store"
)

// Open creates a database with its own roles on the shared test cluster, opens a store on
// it (migrating as the schema owner, serving as the runtime role) and closes the store when
// the test ends. cfg's database URLs are filled in; a nil Logger discards. The roles are
// returned for tests that connect as either.
func Open(t testing.TB, cfg store.Config) (*store.Store, pgtest.Roles) {
	t.Helper()
	db := pgtest.NewRoles(t)
	cfg.DatabaseURL, cfg.MigrateDatabaseURL = db.RuntimeURL, db.OwnerURL
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := store.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(st.Close)
	return st, db
}
