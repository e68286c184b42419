package server

import (
	"net"
	"net/netip"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/edge"
)

// clientAddr is the client's address: the TCP peer, or when the peer is a trusted proxy the
// address its X-Forwarded-For names (edge.Proxies.ClientAddr).
func (s *Server) clientAddr(ctx *fasthttp.RequestCtx) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(ctx.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}, false
	}
	peer := ap.Addr().Unmap()
	if !s.cfg.TrustedProxies.Trusted(peer) {
		return peer, true
	}
	return s.cfg.TrustedProxies.ClientAddr(peer, ctx.Request.Header.PeekAll("X-Forwarded-For")), true
}

// proxiedClient is the address key (edge.AddrKey) of a client behind a trusted proxy: false
// when the peer is not a trusted proxy or did not name another client.
func (s *Server) proxiedClient(ctx *fasthttp.RequestCtx) (netip.Addr, bool) {
	ta, ok := ctx.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, false
	}
	peer := ta.AddrPort().Addr().Unmap()
	if !s.cfg.TrustedProxies.Trusted(peer) {
		return netip.Addr{}, false
	}
	client := s.cfg.TrustedProxies.ClientAddr(peer, ctx.Request.Header.PeekAll("X-Forwarded-For"))
	if client == peer {
		return netip.Addr{}, false
	}
	return edge.AddrKey(client), true
}
