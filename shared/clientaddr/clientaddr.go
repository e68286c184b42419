// Package clientaddr says how both planes count a client address: the data plane's
// connection caps and the control plane's signup rate limit key clients the same way.
package clientaddr

import "net/netip"

// Prefix is the block a client address is counted under: the address itself (/32) for
// IPv4, also when written IPv4-mapped, and its /64 for IPv6 (one subscriber usually holds
// a whole /64, so per-address counting would let one client rotate through 2^64 of them).
// A zone is dropped.
func Prefix(a netip.Addr) netip.Prefix {
	a = a.WithZone("").Unmap()
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}
