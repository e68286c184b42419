package gatewayctl

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sekgate/gateway/shared/snapshot"
)

func TestSnapshotKeygen(t *testing.T) {
	dir := t.TempDir()
	priv, pub := filepath.Join(dir, "signing.pem"), filepath.Join(dir, "signing.pub")
	var out, errOut bytes.Buffer
	noEnv := func(string) string { return "" }
	if code := run(context.Background(), []string{"snapshot", "keygen", "--private-key-file", priv, "--public-key-file", pub}, &out, &errOut, noEnv); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	pb, _ := os.ReadFile(priv)
	ub, _ := os.ReadFile(pub)
	k, err := snapshot.ParsePrivateKey(pb)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := snapshot.ParsePublicKey(ub)
	if err != nil {
		t.Fatal(err)
	}
	// The pair works: a snapshot signed with one verifies with the other.
	s := &snapshot.Snapshot{Version: 1, IssuedAt: time.Now()}
	s.Hash, _ = snapshot.ComputeHash(&s.Content)
	s.Sign(k)
	if err := s.VerifySigned(pk); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(priv); fi.Mode().Perm() != 0o600 {
		t.Fatalf("private key mode %v", fi.Mode())
	}
	// Never overwrites.
	if code := run(context.Background(), []string{"snapshot", "keygen", "--private-key-file", priv, "--public-key-file", pub}, &out, &errOut, noEnv); code == 0 {
		t.Fatal("existing key overwritten")
	}
	if b, _ := os.ReadFile(priv); !bytes.Equal(b, pb) {
		t.Fatal("private key changed")
	}
}
