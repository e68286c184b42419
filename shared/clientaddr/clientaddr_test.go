package clientaddr

import (
	"net/netip"
	"testing"
)

func TestPrefix(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"198.51.100.7", "198.51.100.7/32"},
		{"::ffff:198.51.100.7", "198.51.100.7/32"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"},
		{"fe80::1%eth0", "fe80::/64"},
	} {
		if got := Prefix(netip.MustParseAddr(tc.in)).String(); got != tc.want {
			t.Errorf("Prefix(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
