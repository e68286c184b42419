// Package edge guards the data plane's public listener at the connection level: caps on
// connections in total and per client address, a write deadline on every write to a
// client, and the list of trusted proxies whose X-Forwarded-For names the real client.
package edge

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"

	"github.com/sekgate/gateway/shared/clientaddr"
)

// Proxies is a set of trusted proxy networks. The zero value (and nil) trusts nobody.
type Proxies struct {
	prefixes []netip.Prefix
}

// ParseProxies parses a comma-separated list of CIDRs or bare addresses ("10.0.0.0/8,
// 192.0.2.7, fd00::/8"). An empty string is the empty list.
func ParseProxies(s string) (*Proxies, error) {
	p := &Proxies{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		var pfx netip.Prefix
		var err error
		if strings.Contains(f, "/") {
			pfx, err = netip.ParsePrefix(f)
		} else {
			var a netip.Addr
			a, err = netip.ParseAddr(f)
			if err == nil && a.Zone() != "" {
				return nil, fmt.Errorf("trusted proxy %q: zones are not allowed", f)
			}
			pfx = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: %w", f, err)
		}
		pfx = pfx.Masked()
		if pfx.Addr().Is4In6() {
			// ::ffff:a.b.c.d/n names IPv4 networks; keep them in IPv4 form.
			pfx = netip.PrefixFrom(pfx.Addr().Unmap(), max(pfx.Bits()-96, 0)).Masked()
		}
		p.prefixes = append(p.prefixes, pfx)
	}
	return p, nil
}

// Len is the number of trusted networks.
func (p *Proxies) Len() int {
	if p == nil {
		return 0
	}
	return len(p.prefixes)
}

// Trusted reports whether a is inside a trusted network.
func (p *Proxies) Trusted(a netip.Addr) bool {
	if p == nil || len(p.prefixes) == 0 {
		return false
	}
	a = a.Unmap()
	for _, pfx := range p.prefixes {
		if pfx.Contains(a) {
			return true
		}
	}
	return false
}

// ClientAddr returns the client's address of a request that came from peer with the given
// X-Forwarded-For header values (each a comma-separated list, in the order received). When
// peer is not a trusted proxy the header is ignored and peer is the client. Otherwise the
// list is walked from the right: each hop a trusted proxy appended is skipped while it is
// itself a trusted proxy; the first untrusted hop is the client. An entry that is not an
// address stops the walk at the last address known good, so a client cannot make the
// gateway believe anything a trusted proxy did not write.
func (p *Proxies) ClientAddr(peer netip.Addr, xff [][]byte) netip.Addr {
	client := peer.Unmap()
	if !p.Trusted(client) {
		return client
	}
	for i := len(xff) - 1; i >= 0; i-- {
		v := xff[i]
		for len(v) > 0 {
			var entry []byte
			if j := bytes.LastIndexByte(v, ','); j >= 0 {
				entry, v = v[j+1:], v[:j]
			} else {
				entry, v = v, nil
			}
			entry = bytes.TrimSpace(entry)
			if len(entry) == 0 {
				continue
			}
			a, ok := parseHop(entry)
			if !ok {
				return client
			}
			client = a
			if !p.Trusted(a) {
				return a
			}
		}
	}
	return client
}

// parseHop parses one X-Forwarded-For entry: an address, optionally with a port
// ("192.0.2.1:4711", "[2001:db8::1]:4711"). Zones are refused.
func parseHop(b []byte) (netip.Addr, bool) {
	s := string(b)
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, perr := netip.ParseAddrPort(s)
		if perr != nil {
			return netip.Addr{}, false
		}
		a = ap.Addr()
	}
	if a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// AddrKey is the key a client address is counted under: the first address of its
// clientaddr.Prefix (the address itself for IPv4, its /64 for IPv6).
func AddrKey(a netip.Addr) netip.Addr { return clientaddr.Prefix(a).Addr() }

// Counter counts something in progress per client address key (AddrKey), up to a cap.
type Counter struct {
	max int
	mu  sync.Mutex
	n   map[netip.Addr]int32
}

// NewCounter returns a Counter allowing max at once per key.
func NewCounter(max int) *Counter { return &Counter{max: max, n: map[netip.Addr]int32{}} }

// Acquire takes a place for key; false when key is at the cap.
func (c *Counter) Acquire(key netip.Addr) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n[key]
	if int(n) >= c.max {
		return false
	}
	c.n[key] = n + 1
	return true
}

// Release gives back a place Acquire took.
func (c *Counter) Release(key netip.Addr) {
	c.mu.Lock()
	if n := c.n[key] - 1; n > 0 {
		c.n[key] = n
	} else {
		delete(c.n, key)
	}
	c.mu.Unlock()
}

// Client is the address of the client whose TCP peer is remote: the peer, or when the peer
// is a trusted proxy the address its X-Forwarded-For headers (xff) name (ClientAddr).
func (p *Proxies) Client(remote net.Addr, xff [][]byte) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(remote.String())
	if err != nil {
		return netip.Addr{}, false
	}
	peer := ap.Addr().Unmap()
	if !p.Trusted(peer) {
		return peer, true
	}
	return p.ClientAddr(peer, xff), true
}

// Proxied is the address key (AddrKey) of a client behind a trusted proxy: false when the
// peer remote is not a trusted proxy or did not name another client.
func (p *Proxies) Proxied(remote net.Addr, xff [][]byte) (netip.Addr, bool) {
	ta, ok := remote.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, false
	}
	peer := ta.AddrPort().Addr().Unmap()
	if !p.Trusted(peer) {
		return netip.Addr{}, false
	}
	client := p.ClientAddr(peer, xff)
	if client == peer {
		return netip.Addr{}, false
	}
	return AddrKey(client), true
}
