package server

import (
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/openapi"
)

// openAPI serves the embedded contract as-is (no authentication).
func (s *Server) openAPI(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("application/json")
	ctx.Response.Header.Set(fasthttp.HeaderCacheControl, "public, max-age=300")
	ctx.SetBody(openapi.Document())
}

// docs redirects to the public reference: Config.DocsURL, or this gateway's own
// /openapi.json when none is configured. The 302 has no body.
func (s *Server) docs(ctx *fasthttp.RequestCtx) {
	target := s.cfg.DocsURL
	if target == "" {
		target = s.selfURL(ctx, "/openapi.json")
	}
	ctx.Response.Header.Set(fasthttp.HeaderLocation, target)
	ctx.SetStatusCode(fasthttp.StatusFound)
}

// selfURL is an absolute URL of path on this gateway, built from the request's Host when it
// is a plain host[:port] (letters, digits, '.', '-', ':', '[' and ']'), else from the
// listener's address, so a forged Host cannot inject anything into a Location.
func (s *Server) selfURL(ctx *fasthttp.RequestCtx, path string) string {
	scheme := "http://"
	if ctx.IsTLS() {
		scheme = "https://"
	}
	host := ctx.Host()
	if !plainHost(host) {
		host = []byte(ctx.LocalAddr().String())
	}
	return scheme + string(host) + path
}

func plainHost(h []byte) bool {
	if len(h) == 0 || len(h) > 255 {
		return false
	}
	for _, c := range h {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '-', c == ':', c == '[', c == ']':
		default:
			return false
		}
	}
	return true
}
