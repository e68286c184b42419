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

// selfURL is an absolute URL of path on this gateway, built from the address of the socket
// the client connected to: never from the request's Host, which the client chooses (a
// forged Host would otherwise pick where /docs and 501 links send people). Public nodes
// set Config.DocsURL to their public reference.
func (s *Server) selfURL(ctx *fasthttp.RequestCtx, path string) string {
	scheme := "http://"
	if ctx.IsTLS() {
		scheme = "https://"
	}
	return scheme + ctx.LocalAddr().String() + path
}
