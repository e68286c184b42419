// Package harness holds the steps every harness takes to bring up a gateway deployment from
// its binaries (the benchmark, make chaos, the conformance suite): the snapshot signing
// key pair and the planes' tokens, the control-plane, data-plane and simulator argument
// sets, the database and its runtime role, the control plane's readiness, and catalogue
// and account set-up through the admin API. Which processes run, and how they are
// started and stopped, stays with each harness (package proc runs them for most).
package harness

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/shared/snapshot"
)

// WriteSigningKeys writes a fresh snapshot signing key pair (PEM) into dir as
// snapshot-signing.pem (the control plane's) and snapshot-signing.pub (the nodes').
func WriteSigningKeys(dir string) (priv, pub string, err error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", err
	}
	pk, pubk, err := snapshot.MarshalKeyPair(key)
	if err != nil {
		return "", "", err
	}
	priv, pub = filepath.Join(dir, "snapshot-signing.pem"), filepath.Join(dir, "snapshot-signing.pub")
	if err := os.WriteFile(priv, pk, 0o600); err != nil {
		return "", "", err
	}
	return priv, pub, os.WriteFile(pub, pubk, 0o600)
}

// Token returns prefix followed by 32 random hex digits: an admin token ("adm_") or a
// node token ("node_") for one run.
func Token(prefix string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// Database creates a database called name (plus the cluster's unique suffix) on c and
// returns the schema owner's URL (the control plane migrates with it) and the runtime
// role's (it serves with that one).
func Database(ctx context.Context, c *pgtest.Cluster, name string) (ownerURL, runtimeURL string, err error) {
	if ownerURL, err = c.CreateDatabase(ctx, name); err != nil {
		return "", "", fmt.Errorf("create database: %w", err)
	}
	if runtimeURL, err = c.RuntimeURL(ctx, ownerURL); err != nil {
		return "", "", fmt.Errorf("runtime role: %w", err)
	}
	return ownerURL, runtimeURL, nil
}

// StartPostgres starts a throwaway Postgres cluster (allowing it 90 s) with a database for
// dbName, and returns it with the schema owner's and the runtime role's URLs. The caller
// stops the cluster; on error nothing is left running.
func StartPostgres(ctx context.Context, dbName string) (_ *pgtest.Cluster, ownerURL, runtimeURL string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	c, err := pgtest.Start(ctx)
	if err != nil {
		return nil, "", "", fmt.Errorf("postgres: %w", err)
	}
	if ownerURL, runtimeURL, err = Database(ctx, c, dbName); err != nil {
		if serr := c.Stop(); serr != nil {
			err = errors.Join(err, serr)
		}
		return nil, "", "", err
	}
	return c, ownerURL, runtimeURL, nil
}
