package edge

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseProxies(t *testing.T) {
	for _, c := range []struct {
		in      string
		ok      bool
		trusted []string
		not     []string
	}{
		{"", true, nil, []string{"127.0.0.1", "::1"}},
		{"10.0.0.0/8, 192.0.2.7", true, []string{"10.1.2.3", "192.0.2.7", "::ffff:10.0.0.1"}, []string{"192.0.2.8", "11.0.0.1"}},
		{"fd00::/8", true, []string{"fd12::1"}, []string{"fe80::1", "10.0.0.1"}},
		{"::ffff:10.0.0.0/104", true, []string{"10.9.9.9"}, []string{"11.0.0.0"}},
		{"10.0.0.0/33", false, nil, nil},
		{"example.com", false, nil, nil},
		{"fe80::1%eth0", false, nil, nil},
	} {
		p, err := ParseProxies(c.in)
		if (err == nil) != c.ok {
			t.Errorf("%q: err %v", c.in, err)
			continue
		}
		for _, a := range c.trusted {
			if !p.Trusted(netip.MustParseAddr(a)) {
				t.Errorf("%q: %s not trusted", c.in, a)
			}
		}
		for _, a := range c.not {
			if p.Trusted(netip.MustParseAddr(a)) {
				t.Errorf("%q: %s trusted", c.in, a)
			}
		}
	}
}

func TestClientAddr(t *testing.T) {
	p, err := ParseProxies("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		peer string
		xff  []string
		want string
	}{
		{"203.0.113.1", []string{"198.51.100.1"}, "203.0.113.1"}, // untrusted peer: header ignored
		{"10.0.0.1", nil, "10.0.0.1"},
		{"10.0.0.1", []string{"198.51.100.1"}, "198.51.100.1"},
		{"10.0.0.1", []string{"1.1.1.1, 198.51.100.1, 10.2.2.2"}, "198.51.100.1"},
		{"10.0.0.1", []string{"1.1.1.1", "198.51.100.1"}, "198.51.100.1"},
		{"10.0.0.1", []string{"198.51.100.1:4711"}, "198.51.100.1"},
		{"10.0.0.1", []string{"[2001:db8::1]:4711"}, "2001:db8::1"},
		{"10.0.0.1", []string{"unknown"}, "10.0.0.1"},
		{"10.0.0.1", []string{"198.51.100.1, 10.3.3.3, junk"}, "10.0.0.1"},
		{"10.0.0.1", []string{"junk, 10.3.3.3"}, "10.3.3.3"},
		{"10.0.0.1", []string{" , ,"}, "10.0.0.1"},
		{"::ffff:10.0.0.1", []string{"::ffff:198.51.100.1"}, "198.51.100.1"},
	} {
		var xff [][]byte
		for _, v := range c.xff {
			xff = append(xff, []byte(v))
		}
		if got := p.ClientAddr(netip.MustParseAddr(c.peer), xff); got.String() != c.want {
			t.Errorf("peer %s xff %q: %s, want %s", c.peer, c.xff, got, c.want)
		}
	}
}

func TestAddrKey(t *testing.T) {
	if k := AddrKey(netip.MustParseAddr("2001:db8:1:2:3:4:5:6")); k.String() != "2001:db8:1:2::" {
		t.Errorf("v6 key %s", k)
	}
	if k := AddrKey(netip.MustParseAddr("::ffff:192.0.2.1")); k.String() != "192.0.2.1" {
		t.Errorf("mapped v4 key %s", k)
	}
}

// FuzzClientAddr: any header and trusted list leave ClientAddr returning the peer or an
// address that appears in the header, never panicking.
func FuzzClientAddr(f *testing.F) {
	f.Add("10.0.0.0/8", "10.0.0.1", "1.1.1.1, 198.51.100.1, 10.2.2.2")
	f.Add("", "::1", "[2001:db8::1]:80")
	f.Add("0.0.0.0/0,::/0", "192.0.2.1", ",,, fe80::1%eth0, 1.2.3.4:99999")
	f.Fuzz(func(t *testing.T, trusted, peer, xff string) {
		p, err := ParseProxies(trusted)
		if err != nil {
			return
		}
		pa, err := netip.ParseAddr(peer)
		if err != nil {
			return
		}
		got := p.ClientAddr(pa, [][]byte{[]byte(xff)})
		if !got.IsValid() {
			t.Fatalf("invalid address from %q %q", peer, xff)
		}
		if got != pa.Unmap() && !strings.Contains(xff, strings.TrimPrefix(got.String(), "::ffff:")) {
			// The header may spell the address differently (leading zeros, v4-mapped).
			found := false
			for _, e := range strings.Split(xff, ",") {
				if a, ok := parseHop([]byte(strings.TrimSpace(e))); ok && a == got {
					found = true
				}
			}
			if !found {
				t.Fatalf("client %s is neither the peer %s nor in %q", got, pa, xff)
			}
		}
	})
}
