package flagenv

import (
	"flag"
	"fmt"
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

func TestPositiveInts(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr string
	}{
		{in: "", want: nil},
		{in: "500", want: []int{500}},
		{in: "1,4,16", want: []int{1, 4, 16}},
		{in: "1, 4,,16", want: []int{1, 4, 16}},
		{in: "1,0", wantErr: `bad rate "0"`},
		{in: "1,-2", wantErr: `bad rate "-2"`},
		{in: "1,x", wantErr: `bad rate "x"`},
		{in: "1, ", wantErr: `bad rate " "`},
	}
	for _, tc := range tests {
		got, err := PositiveInts(tc.in, "rate")
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("PositiveInts(%q) error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("PositiveInts(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
