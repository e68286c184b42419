package main

import (
	"testing"

	"github.com/sekgate/gateway/internal/deptest"
)

// TestDeps: the data plane (the binary and every package under dataplane/, test helpers
// included) runs without the control plane's code or Postgres and links no tooling or
// heavy module; the binary links no testing package either.
func TestDeps(t *testing.T) {
	planes := map[string]string{
		deptest.Module + "/controlplane": "the data plane never imports the control plane",
		"github.com/jackc/pgx":           "the data plane never talks to Postgres",
	}
	for p, why := range deptest.Tooling {
		planes[p] = why
	}
	for p, why := range deptest.Heavy {
		planes[p] = why
	}
	deptest.Check(t, planes, deptest.Module+"/dataplane/...")
	bin := deptest.Production()
	for p, why := range planes {
		bin[p] = why
	}
	deptest.Check(t, bin, deptest.Module+"/cmd/dataplane")
}
