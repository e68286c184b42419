package flagenv

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	env := map[string]string{"GATEWAY_LISTEN": "127.0.0.1:1", "GATEWAY_NODE_ID": "from-env", "GATEWAY_WAIT": "3s"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		name        string
		args        []string
		listen, id  string
		wait        time.Duration
		badEnvValue bool
	}{
		{"env fills flags", nil, "127.0.0.1:1", "from-env", 3 * time.Second, false},
		{"command line wins", []string{"--node-id", "cli"}, "127.0.0.1:1", "cli", 3 * time.Second, false},
		{"bad env value", nil, "", "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			listen := fs.String("listen", "default", "")
			id := fs.String("node-id", "", "")
			wait := fs.Duration("wait", 0, "")
			l := lookup
			if tt.badEnvValue {
				l = func(k string) (string, bool) {
					if k == "GATEWAY_WAIT" {
						return "soon", true
					}
					return "", false
				}
			}
			err := Parse(fs, tt.args, "GATEWAY_", l)
			if tt.badEnvValue {
				if err == nil || !strings.Contains(err.Error(), "GATEWAY_WAIT") {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil || *listen != tt.listen || *id != tt.id || *wait != tt.wait {
				t.Fatalf("got %q %q %v %v", *listen, *id, *wait, err)
			}
		})
	}
}
