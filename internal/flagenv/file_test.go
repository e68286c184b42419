package flagenv

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", "listen: 127.0.0.1:7\nnode-id: from-file\nwait: 4s\nregion-urls:\n  se: https://se.example\n  eu: https://eu.example\nproxies: [10.0.0.0/8, 192.0.2.1]\n")
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
		listen  string
		id      string
		wait    time.Duration
		regions string
		proxies string
	}{
		{name: "file fills flags", args: []string{"--config", good}, listen: "127.0.0.1:7", id: "from-file", wait: 4 * time.Second,
			regions: "se=https://se.example,eu=https://eu.example", proxies: "10.0.0.0/8,192.0.2.1"},
		{name: "environment wins over file", args: []string{"--config", good}, env: map[string]string{"GATEWAY_NODE_ID": "env"},
			listen: "127.0.0.1:7", id: "env", wait: 4 * time.Second, regions: "se=https://se.example,eu=https://eu.example", proxies: "10.0.0.0/8,192.0.2.1"},
		{name: "command line wins over both", args: []string{"--config", good, "--node-id", "cli", "--wait", "1s"}, env: map[string]string{"GATEWAY_NODE_ID": "env"},
			listen: "127.0.0.1:7", id: "cli", wait: time.Second, regions: "se=https://se.example,eu=https://eu.example", proxies: "10.0.0.0/8,192.0.2.1"},
		{name: "file named in the environment", env: map[string]string{"GATEWAY_CONFIG": good}, listen: "127.0.0.1:7", id: "from-file", wait: 4 * time.Second,
			regions: "se=https://se.example,eu=https://eu.example", proxies: "10.0.0.0/8,192.0.2.1"},
		{name: "unknown key", args: []string{"--config", write("unknown.yaml", "listen: x\nlisten-adress: y\n")}, wantErr: `unknown setting "listen-adress"`},
		{name: "bad value", args: []string{"--config", write("bad.yaml", "wait: soon\n")}, wantErr: "wait="},
		{name: "not YAML", args: []string{"--config", write("broken.yaml", "listen: [\n")}, wantErr: "broken.yaml"},
		{name: "nested value", args: []string{"--config", write("nested.yaml", "region-urls:\n  se: {a: b}\n")}, wantErr: "region-urls"},
		{name: "missing file", args: []string{"--config", filepath.Join(dir, "absent.yaml")}, wantErr: "absent.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			listen := fs.String("listen", "default", "")
			id := fs.String("node-id", "", "")
			wait := fs.Duration("wait", 0, "")
			regions := fs.String("region-urls", "", "")
			proxies := fs.String("proxies", "", "")
			err := Parse(fs, tt.args, "GATEWAY_", func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || *listen != tt.listen || *id != tt.id || *wait != tt.wait || *regions != tt.regions || *proxies != tt.proxies {
				t.Fatalf("got %q %q %v %q %q %v", *listen, *id, *wait, *regions, *proxies, err)
			}
		})
	}
}

func TestPrintConfig(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var nodeToken, adminToken, apiKey Secret
	var db, kv DSN
	fs.Var(&nodeToken, "node-token", "")
	fs.String("node-token-file", "", "")
	fs.Var(&adminToken, "admin-token", "")
	fs.Var(&apiKey, "stripe-secret-key", "")
	fs.Var(&db, "database-url", "")
	fs.Var(&kv, "migrate-database-url", "")
	fs.String("listen", "127.0.0.1:8080", "")
	fs.String("upstream-url", "", "")
	var out strings.Builder
	err := ParseTo(&out, fs, []string{"--print-config", "--node-token", "s3cr3t-token-value", "--node-token-file", "/run/t",
		"--stripe-secret-key", "sk_test_s3cr3t", "--database-url", "postgres://app:hunter2@db:5432/gw",
		"--migrate-database-url", "host=db user=owner password='hunter2 again'", "--upstream-url", "https://u:hunter2@up.example/v1"},
		"GATEWAY_", func(string) (string, bool) { return "", false })
	if !errors.Is(err, ErrPrintedConfig) {
		t.Fatalf("err %v", err)
	}
	got := out.String()
	for _, want := range []string{"node-token: '[redacted]'", "stripe-secret-key: '[redacted]'", "node-token-file: /run/t",
		"admin-token: \"\"", "listen: 127.0.0.1:8080", "database-url: postgres://app:xxxxx@db:5432/gw",
		"migrate-database-url: host=db user=owner password=xxxxx", "upstream-url: https://u:xxxxx@up.example/v1"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	for _, secret := range []string{"s3cr3t", "hunter2"} {
		if strings.Contains(got, secret) {
			t.Errorf("%q printed:\n%s", secret, got)
		}
	}
}
