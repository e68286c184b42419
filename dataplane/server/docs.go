package server

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/openapi"
)

// openAPI serves the embedded contract with its servers naming this gateway's public base
// URL (publicBase), no authentication.
func (s *Server) openAPI(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("application/json")
	ctx.Response.Header.Set(fasthttp.HeaderCacheControl, "public, max-age=300")
	ctx.SetBody(openapi.WithServer(s.base.Listener(ctx)))
}

// docs answers the reference for a person: a 302 to Config.DocsURL when the operator has
// a public reference, else an HTML page the node renders from its own contract.
func (s *Server) docs(ctx *fasthttp.RequestCtx) {
	if s.cfg.DocsURL != "" {
		ctx.Response.Header.Set(fasthttp.HeaderLocation, s.cfg.DocsURL)
		ctx.SetStatusCode(fasthttp.StatusFound)
		return
	}
	page, err := openapi.HTML(s.base.Listener(ctx))
	if err != nil {
		s.log.Error("render the reference", "err", err)
		writeError(ctx, errInternal)
		return
	}
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.Response.Header.Set(fasthttp.HeaderCacheControl, "public, max-age=300")
	ctx.SetBody(page)
}

// selfURL is an absolute URL of path on this gateway: Config.PublicURL, else the address
// of the socket the client connected to; never the request's Host, which the client
// chooses (a forged Host would otherwise pick where 501 links send people).
func (s *Server) selfURL(ctx *fasthttp.RequestCtx, path string) string {
	return s.base.Listener(ctx) + path
}

// wantsJSON reports whether the client asks for JSON and not for HTML (an API client):
// such a request to / gets the JSON 404, anything else the landing page.
func wantsJSON(ctx *fasthttp.RequestCtx) bool {
	a := ctx.Request.Header.Peek(fasthttp.HeaderAccept)
	return bytes.Contains(a, []byte("application/json")) && !bytes.Contains(a, []byte("text/html"))
}

// landing answers GET / for a person: what this is and where to read more.
func (s *Server) landing(ctx *fasthttp.RequestCtx) {
	page, err := openapi.Landing(s.base.Listener(ctx))
	if err != nil {
		writeError(ctx, errInternal)
		return
	}
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBody(page)
}
