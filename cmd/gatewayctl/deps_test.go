package main

import (
	"testing"

	"github.com/sekgate/gateway/internal/deptest"
)

// TestDeps: gatewayctl links no tooling or heavy module.
func TestDeps(t *testing.T) {
	deptest.Check(t, deptest.Production(), deptest.Module+"/cmd/gatewayctl")
}
