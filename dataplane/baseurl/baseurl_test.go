package baseurl

import (
	"strings"
	"testing"
)

func TestValidHost(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{"gw.example", true}, {"gw.example:8443", true}, {"127.0.0.1:80", true}, {"[::1]:80", true},
		{"", false}, {"gw.example:x", false}, {"a b", false}, {`gw"x`, false}, {"gw/x", false},
		{"<script>", false}, {strings.Repeat("a", 256), false}, {":80", false},
	} {
		if got := validHost([]byte(tt.in)); got != tt.want {
			t.Errorf("validHost(%q) = %v", tt.in, got)
		}
	}
}
