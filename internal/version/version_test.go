package version

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	tests := []struct {
		name   string
		bi     *debug.BuildInfo
		linked string
		want   string
	}{
		{"no build info", nil, "", "(devel) revision unknown"},
		{"unstamped checkout build", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/sekgate/gateway", Version: "(devel)"}}, "",
			"(devel) revision unknown go1.26.8"},
		{"unstamped, revision linked in", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "0123abc",
			"(devel) revision 0123abc go1.26.8"},
		{"stamped", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/sekgate/gateway", Version: "v1.2.3"},
			Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "e2ebf1a0"}, {Key: "vcs.time", Value: "2026-11-24T03:00:00Z"}, {Key: "vcs.modified", Value: "false"}}}, "ignored",
			"v1.2.3 revision e2ebf1a0 (2026-11-24T03:00:00Z) go1.26.8"},
		{"modified tree", &debug.BuildInfo{Main: debug.Module{Version: ""},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}}, "",
			"(devel) revision abc+modified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FromBuildInfo(tt.bi, tt.linked).String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRequested(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--version"}, true},
		{[]string{"-version"}, true},
		{[]string{"--listen", ":1", "--version"}, true},
		{[]string{"--version=true"}, true},
		{[]string{"--version=false"}, false},
		{[]string{"--", "--version"}, false},
		{[]string{"--versions"}, false},
	}
	for _, tt := range tests {
		if got := Requested(tt.args); got != tt.want {
			t.Errorf("Requested(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

func TestPrintNamesTheBinary(t *testing.T) {
	var b bytes.Buffer
	Print(&b, "dataplane")
	if !strings.HasPrefix(b.String(), "dataplane ") || !strings.HasSuffix(b.String(), "\n") {
		t.Fatalf("Print wrote %q", b.String())
	}
	// A test binary carries build info with the Go version it was built with.
	if !strings.Contains(b.String(), "go1.") {
		t.Errorf("Print wrote no Go version: %q", b.String())
	}
}
