package server

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"
)

// baseURL is the base URL the client used to reach the gateway, for hints in error
// messages: Config.PublicURL when set; else the request's scheme (https on TLS, or as a
// trusted proxy's X-Forwarded-Proto says) and its Host when that is a plain host[:port];
// else the address of the socket the client connected to. The Host is only ever echoed
// back to the client that sent it, in the body of an error; published links (/docs, 501
// documentation links, openapi.json servers) use publicBase instead.
func (s *Server) baseURL(ctx *fasthttp.RequestCtx) string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
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

// publicBase is the base URL published in documents and links: Config.PublicURL, or the
// address of the socket the client connected to (never the request's Host, which the
// client chooses).
func (s *Server) publicBase(ctx *fasthttp.RequestCtx) string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
	}
	scheme := "http://"
	if ctx.IsTLS() {
		scheme = "https://"
	}
	return scheme + ctx.LocalAddr().String()
}

// forwardedHTTPS reports whether a trusted proxy in front of the node says the client
// spoke https.
func (s *Server) forwardedHTTPS(ctx *fasthttp.RequestCtx) bool {
	ta, ok := ctx.RemoteAddr().(*net.TCPAddr)
	if !ok || !s.cfg.TrustedProxies.Trusted(ta.AddrPort().Addr().Unmap()) {
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

// setPublicURL checks and sets Config.PublicURL (empty: none).
func (s *Server) setPublicURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := ParsePublicURL(raw)
	if err != nil {
		return fmt.Errorf("server: PublicURL %q: %w", raw, err)
	}
	s.cfg.PublicURL = u
	return nil
}

// ParsePublicURL checks a node's public base URL (scheme://host[:port][/path], http or
// https, no query, fragment or user info) and returns it without a trailing slash.
func ParsePublicURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", errPublicURL
	}
	return strings.TrimRight(raw, "/"), nil
}

var errPublicURL = errors.New("want an absolute http(s) URL without user info, query or fragment")
