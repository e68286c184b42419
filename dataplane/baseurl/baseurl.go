// Package baseurl says which base URL a node's clients reach it by: the operator's public
// URL when one is set, else what the client's request shows (its Host, and the scheme a
// trusted proxy reports), for hints, openapi.json's servers and the docs links.
package baseurl

import (
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/edge"
)

// Resolver finds the base URL of a request.
type Resolver struct {
	// Public is the operator's public base URL (Parse), "" for none.
	Public string
	// Proxies are the trusted proxies whose X-Forwarded-Proto counts.
	Proxies *edge.Proxies
}

// Of is the base URL the client used to reach the gateway, for hints in error
// messages: Public when set; else the request's scheme (https on TLS, or as a
// trusted proxy's X-Forwarded-Proto says) and its Host when that is a plain host[:port];
// else the address of the socket the client connected to. The Host is only ever echoed
// back to the client that sent it, in the body of an error; published links (/docs, 501
// documentation links, openapi.json servers) use Listener instead.
func (s *Resolver) Of(ctx *fasthttp.RequestCtx) string {
	if s.Public != "" {
		return s.Public
	}
	scheme := "http://"
	if ctx.IsTLS() || s.forwardedHTTPS(ctx) {
		scheme = "https://"
	}
	if h := ctx.Request.Header.Host(); validHost(h) {
		return scheme + string(h)
	}
	return scheme + ctx.LocalAddr().String()
}

// Listener is the base URL published in documents and links: Public, or the
// address of the socket the client connected to (never the request's Host, which the
// client chooses).
func (s *Resolver) Listener(ctx *fasthttp.RequestCtx) string {
	if s.Public != "" {
		return s.Public
	}
	scheme := "http://"
	if ctx.IsTLS() {
		scheme = "https://"
	}
	return scheme + ctx.LocalAddr().String()
}

// forwardedHTTPS reports whether a trusted proxy in front of the node says the client
// spoke https.
func (s *Resolver) forwardedHTTPS(ctx *fasthttp.RequestCtx) bool {
	ta, ok := ctx.RemoteAddr().(*net.TCPAddr)
	if !ok || !s.Proxies.Trusted(ta.AddrPort().Addr().Unmap()) {
		return false
	}
	return strings.EqualFold(string(ctx.Request.Header.Peek("X-Forwarded-Proto")), "https")
}

// validHost reports whether h is a host name, IPv4 or bracketed IPv6 address with an
// optional port: nothing else is echoed into a hint.
func validHost(h []byte) bool {
	if len(h) == 0 || len(h) > 255 {
		return false
	}
	host, port, err := net.SplitHostPort(string(h))
	if err != nil {
		host, port = string(h), ""
	}
	for _, c := range []byte(port) {
		if c < '0' || c > '9' {
			return false
		}
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	if host == "" {
		return false
	}
	for _, c := range []byte(host) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Parse checks a node's public base URL (scheme://host[:port][/path], http or
// https, no query, fragment or user info) and returns it without a trailing slash.
func Parse(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", errURL
	}
	return strings.TrimRight(raw, "/"), nil
}

var errURL = errors.New("want an absolute http(s) URL without user info, query or fragment")
