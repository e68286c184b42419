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

// A duration written as people say it is refused naming Go's notation, from any source;
// durations in that notation still parse.
func TestDurationErrors(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfgFile, []byte("drain-timeout: 10 minutes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		args    []string
		env     map[string]string
		want    time.Duration
		wantErr string // "" for success
	}{
		{"command line", []string{"--drain-timeout", "10 minutes"}, nil, 0, `invalid value "10 minutes" for flag -drain-timeout`},
		{"environment", nil, map[string]string{"GATEWAY_DRAIN_TIMEOUT": "10min"}, 0, `GATEWAY_DRAIN_TIMEOUT="10min"`},
		{"config file", []string{"--config", cfgFile}, nil, 0, "drain-timeout"},
		{"Go notation", []string{"--drain-timeout", "1h30m"}, nil, 90 * time.Minute, ""},
		{"Go notation from the environment", nil, map[string]string{"GATEWAY_DRAIN_TIMEOUT": "10m"}, 10 * time.Minute, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			d := fs.Duration("drain-timeout", time.Second, "")
			err := ParseTo(io.Discard, fs, tt.args, "GATEWAY_", func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if tt.wantErr == "" {
				if err != nil || *d != tt.want {
					t.Fatalf("got %v, %v; want %v", *d, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) ||
				!strings.Contains(err.Error(), "use Go durations such as 10m, 1h30m") {
				t.Fatalf("error %v; want it to name %q and the format", err, tt.wantErr)
			}
			if tt.name != "command line" && !errors.Is(err, ErrDuration) {
				t.Fatalf("error %v is not ErrDuration", err)
			}
		})
	}
}
