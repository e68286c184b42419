package local_test

import (
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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

// TestMain runs the test binary as a stand-in for a plane when asked to (signalChild).
func TestMain(m *testing.M) {
	if f := os.Getenv("LIB_TEST_SIGNAL_FILE"); f != "" {
		signalChild(f)
		return
	}
	os.Exit(m.Run())
}

// signalChild waits, as the planes do, for SIGINT or SIGTERM and writes which came to f.
func signalChild(f string) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	if err := os.WriteFile(f+".up", nil, 0o600); err != nil {
		os.Exit(1)
	}
	s := <-ch
	_ = os.WriteFile(f, []byte(s.String()), 0o600)
}

// TestStopAllPassesTheSignal: a Ctrl-C of the local stack (SIGINT to its process group)
// reaches the processes it started as SIGINT, so the data plane skips its shutdown delay;
// a SIGTERM stays a SIGTERM.
func TestStopAllPassesTheSignal(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			got := filepath.Join(dir, "got")
			script := `set -euo pipefail; DATA="$1"; TAG=test; . ./lib.sh; on_exit_stop_all
				LIB_TEST_SIGNAL_FILE="$1/got" start child "$2"
				while [ ! -e "$1/got.up" ]; do sleep 0.05; done
				echo ready; while :; do sleep 0.05; done`
			cmd := exec.Command("bash", "-c", script, "bash", dir, self)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a terminal's foreground group
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line := make([]byte, 6)
			if _, err := io.ReadFull(out, line); err != nil || string(line) != "ready\n" {
				_ = cmd.Process.Kill()
				t.Fatalf("script not ready: %q %v", line, err)
			}
			if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, _ = io.Copy(io.Discard, out); done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatal("the script did not stop")
			}
			if b, err := os.ReadFile(got); err != nil || string(b) != sig.String() {
				t.Fatalf("child stopped by %q (%v), want %q", b, err, sig.String())
			}
		})
	}
}
