package local_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// stub writes an executable NAME in dir that records its arguments and its GF_* and
// GATEWAY_* environment in dir/NAME.called, then exits.
func stub(t *testing.T, dir, name string) {
	t.Helper()
	script := "#!/usr/bin/env bash\n{ printf '%s\\n' \"$@\"; env | grep -E '^(GF|GATEWAY)_' | sort; } >\"" +
		filepath.Join(dir, name+".called") + "\"\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// grafanaStack runs lib.sh's grafana_stack with PATH starting at binDir, waits for what
// it started, and returns its output.
func grafanaStack(t *testing.T, data, binDir string) string {
	t.Helper()
	script := `set -euo pipefail; root=$(cd ../.. && pwd); DATA="$1"; TAG=test; . ./lib.sh
		grafana_stack 9390 3390 127.0.0.1:9209 127.0.0.1:9281 127.0.0.1:9282
		for p in "${opt_pids[@]}"; do wait "$p"; done`
	cmd := exec.Command("bash", "-c", script, "bash", data)
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("grafana_stack: %v: %s", err, out)
	}
	return string(out)
}

// run-fleet's grafana_stack writes the provisioning folder and a Prometheus configuration
// of the ops listeners, and starts Prometheus and Grafana on loopback ports with the
// environment the provisioning files read.
func TestGrafanaStackProvisionsTheDashboard(t *testing.T) {
	data, bin := t.TempDir(), t.TempDir()
	stub(t, bin, "prometheus")
	stub(t, bin, "grafana-server")
	out := grafanaStack(t, data, bin)
	if !strings.Contains(out, "starting Prometheus on 127.0.0.1:9390") || !strings.Contains(out, "starting Grafana on 127.0.0.1:3390") {
		t.Errorf("output:\n%s", out)
	}
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	prov := filepath.Join(data, "grafana", "provisioning")
	for _, f := range []string{"datasources/gateway.yaml", "dashboards/gateway.yaml"} {
		got, err := os.ReadFile(filepath.Join(prov, f))
		want, _ := os.ReadFile(filepath.Join(root, "deploy", "grafana", "provisioning", f))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v, or not the repository's", f, err)
		}
	}
	called, err := os.ReadFile(filepath.Join(bin, "grafana-server.called"))
	if err != nil {
		t.Fatal(err)
	}
	g := string(called)
	for _, want := range []string{"--homepath\n", "GF_SERVER_HTTP_ADDR=127.0.0.1\n", "GF_SERVER_HTTP_PORT=3390\n",
		"GF_PATHS_PROVISIONING=" + prov + "\n", "GATEWAY_PROMETHEUS_URL=http://127.0.0.1:9390\n",
		"GATEWAY_GRAFANA_DASHBOARDS=" + filepath.Join(root, "deploy", "grafana") + "\n", "GF_SECURITY_ADMIN_PASSWORD=grafana_"} {
		if !strings.Contains(g, want) {
			t.Errorf("grafana started without %q:\n%s", want, g)
		}
	}
	if st, err := os.Stat(filepath.Join(root, "deploy", "grafana", "gateway.json")); err != nil || st.Size() == 0 {
		t.Errorf("no dashboard in the provider's folder: %v", err)
	}
	called, err = os.ReadFile(filepath.Join(bin, "prometheus.called"))
	if err != nil || !strings.Contains(string(called), "--config.file\n"+filepath.Join(data, "prometheus.yml")+"\n") ||
		!strings.Contains(string(called), "--web.listen-address\n127.0.0.1:9390\n") {
		t.Errorf("prometheus started with %s (%v)", called, err)
	}
	var pc struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	b, _ := os.ReadFile(filepath.Join(data, "prometheus.yml"))
	if err := yaml.Unmarshal(b, &pc); err != nil || len(pc.ScrapeConfigs) != 2 ||
		strings.Join(pc.ScrapeConfigs[0].StaticConfigs[0].Targets, ",") != "127.0.0.1:9209" ||
		strings.Join(pc.ScrapeConfigs[1].StaticConfigs[0].Targets, ",") != "127.0.0.1:9281,127.0.0.1:9282" {
		t.Errorf("prometheus.yml %v:\n%s", err, b)
	}
	if s, _ := os.ReadFile(filepath.Join(data, "secrets.env")); !strings.Contains(string(s), "GRAFANA_PASSWORD=grafana_") {
		t.Error("no Grafana password kept")
	}
	if strings.Contains(out, "grafana_") {
		t.Error("the Grafana password was printed")
	}
}

// Without the binaries, grafana_stack says how to start them, and never prints the password.
func TestGrafanaStackWithoutGrafanaSaysHow(t *testing.T) {
	for _, b := range []string{"grafana", "grafana-server", "prometheus"} {
		if _, err := exec.LookPath(b); err == nil {
			t.Skipf("%s is installed", b)
		}
	}
	data := t.TempDir()
	out := grafanaStack(t, data, t.TempDir())
	for _, want := range []string{"no prometheus on PATH", "prometheus --config.file " + filepath.Join(data, "prometheus.yml"),
		"no grafana on PATH", "http://127.0.0.1:3390/d/sekgate-gateway", "GATEWAY_PROMETHEUS_URL=http://127.0.0.1:9390",
		"GF_PATHS_PROVISIONING=" + filepath.Join(data, "grafana", "provisioning"), "grafana server --homepath"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "grafana_") {
		t.Errorf("the Grafana password was printed:\n%s", out)
	}
}
