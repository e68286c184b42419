package local_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestWritePrivate: the settings file make run writes (admin token, webhook secret, API
// key) is readable by its owner only, also when an earlier run left it world-readable.
func TestWritePrivate(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "demo.env")
	if err := os.WriteFile(f, []byte("OLD=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, existing := range []bool{true, false} {
		if !existing {
			os.Remove(f)
		}
		cmd := exec.Command("bash", "-c", `set -euo pipefail; DATA="$1"; TAG=test; . ./lib.sh; printf 'GATEWAY_ADMIN_TOKEN=x\n' | write_private "$1/demo.env"`, "bash", dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("write_private: %v: %s", err, out)
		}
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Fatalf("existing=%v: mode %v, want 0600", existing, st.Mode().Perm())
		}
		if b, _ := os.ReadFile(f); string(b) != "GATEWAY_ADMIN_TOKEN=x\n" {
			t.Fatalf("content %q", b)
		}
	}
}
