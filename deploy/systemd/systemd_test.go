// Package systemd holds hardened systemd units for the planes and environment files for the
// one-box-per-region case, and the test that checks them.
package systemd

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/deploy/internal/binflags"
)

var units = map[string]struct {
	binary   string
	envFiles []string
}{
	"sekgate-controlplane.service": {"controlplane", []string{"controlplane.env"}},
	"sekgate-dataplane@.service":   {"dataplane", []string{"dataplane-se.env", "dataplane-eu.env", "dataplane-any.env"}},
}

// hardening is what every unit must say.
var hardening = map[string]string{
	"DynamicUser": "yes", "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
	"PrivateTmp": "yes", "PrivateDevices": "yes", "CapabilityBoundingSet": "", "RestrictSUIDSGID": "yes",
	"MemoryDenyWriteExecute": "yes", "SystemCallArchitectures": "native", "KillSignal": "SIGTERM",
	"RestrictNamespaces": "yes", "ProtectKernelTunables": "yes", "ProtectControlGroups": "yes",
}

func TestUnits(t *testing.T) {
	flags, err := binflags.Flags("dataplane", "controlplane")
	if err != nil {
		t.Fatal(err)
	}
	for unit, u := range units {
		t.Run(unit, func(t *testing.T) {
			d := directives(t, unit)
			for k, want := range hardening {
				if got, ok := d[k]; !ok || got[len(got)-1] != want {
					t.Errorf("%s=%q, want %q", k, got, want)
				}
			}
			if exec := d["ExecStart"]; len(exec) != 1 || filepath.Base(strings.Fields(exec[0])[0]) != u.binary {
				t.Errorf("ExecStart %q does not run %s", exec, u.binary)
			}
			for _, e := range d["Environment"] {
				name, _, _ := strings.Cut(e, "=")
				checkFlag(t, flags[u.binary], u.binary, unit, name)
			}
			if u.binary == "dataplane" && (len(d["StateDirectory"]) == 0 || !strings.Contains(strings.Join(d["Environment"], " "), "GATEWAY_DATA_DIR=%S/"+d["StateDirectory"][0])) {
				t.Errorf("the spool must live in the StateDirectory: %q, %q", d["StateDirectory"], d["Environment"])
			}
			if u.binary == "dataplane" {
				checkStopTimeout(t, d)
			}
			for _, f := range u.envFiles {
				for _, name := range envNames(t, f) {
					checkFlag(t, flags[u.binary], u.binary, f, name)
				}
			}
			verify(t, unit)
		})
	}
}

// checkStopTimeout: systemd's SIGKILL must not cut a drain, so TimeoutStopSec exceeds the
// node's shutdown delay, drain timeout and spool flush timeout together.
func checkStopTimeout(t *testing.T, d map[string][]string) {
	t.Helper()
	env := map[string]string{}
	for _, e := range d["Environment"] {
		k, v, _ := strings.Cut(e, "=")
		env[k] = v
	}
	var total time.Duration
	for _, name := range []string{"GATEWAY_SHUTDOWN_DELAY", "GATEWAY_DRAIN_TIMEOUT", "GATEWAY_SHUTDOWN_FLUSH_TIMEOUT"} {
		v, err := time.ParseDuration(env[name])
		if err != nil {
			t.Errorf("Environment=%s must be a duration: %v", name, err)
		}
		total += v
	}
	stop, err := time.ParseDuration(d["TimeoutStopSec"][len(d["TimeoutStopSec"])-1])
	if err != nil || stop < total+5*time.Second {
		t.Errorf("TimeoutStopSec=%v (%v), want at least the shutdown's %v plus 5s", d["TimeoutStopSec"], err, total)
	}
}

func checkFlag(t *testing.T, known map[string]bool, binary, file, env string) {
	t.Helper()
	if binflags.RuntimeEnv(env) {
		return
	}
	f, ok := binflags.EnvFlag(env)
	if !ok {
		t.Errorf("%s: %s is not a GATEWAY_ setting", file, env)
	} else if !known[f] {
		t.Errorf("%s: %s sets --%s, which %s does not define", file, env, f, binary)
	}
}

// verify runs systemd-analyze on a copy whose ExecStart is an executable that exists here,
// and fails on anything it reports (unknown directives, bad values).
func verify(t *testing.T, unit string) {
	t.Helper()
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze not found: install Debian's systemd package (.ci/run does)")
	}
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "ExecStart=") {
			l = "ExecStart=" + self
		}
		out = append(out, l)
	}
	copyPath := filepath.Join(t.TempDir(), strings.Replace(unit, "@.", "@se.", 1))
	if err := os.WriteFile(copyPath, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	msg, err := exec.Command(sa, "verify", copyPath).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(msg))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, msg)
	}
}

// directives reads a unit file's Key=Value lines (all sections) into key -> values.
func directives(t *testing.T, path string) map[string][]string {
	t.Helper()
	d := map[string][]string{}
	for _, l := range lines(t, path) {
		if strings.HasPrefix(l, "[") {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			t.Errorf("%s: %q is not Key=Value", path, l)
			continue
		}
		d[k] = append(d[k], v)
	}
	return d
}

// envNames reads an environment file's variable names.
func envNames(t *testing.T, path string) []string {
	t.Helper()
	var names []string
	for _, l := range lines(t, path) {
		k, _, ok := strings.Cut(l, "=")
		if !ok {
			t.Errorf("%s: %q is not NAME=value", path, l)
		}
		names = append(names, k)
	}
	if len(names) == 0 {
		t.Errorf("%s sets nothing", path)
	}
	return names
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
