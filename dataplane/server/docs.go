package server

import (
	"bytes"
	"html/template"

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
	var b bytes.Buffer
	if err := landingTemplate.Execute(&b, s.base.Listener(ctx)); err != nil {
		writeError(ctx, errInternal)
		return
	}
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBody(b.Bytes())
}

var landingTemplate = template.Must(template.New("landing").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Inference gateway</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#222}code{font:14px ui-monospace,monospace;background:#f4f4f4;padding:.1rem .3rem}</style>
</head><body>
<h1>Inference gateway</h1>
<p>This is an API for open-weight language models, run on infrastructure approved for each customer account under its residency policy. It speaks the OpenAI-style chat, completions, embeddings and Responses protocols and the Messages protocol.</p>
<p>Point OpenAI SDKs at <code>{{.}}/v1</code> and Messages (Anthropic) SDKs at <code>{{.}}</code>, with the API key from the console as <code>Authorization: Bearer &lt;API_KEY&gt;</code>.</p>
<ul>
<li><a href="/docs">Reference</a>: every endpoint, its errors and limits.</li>
<li><a href="/openapi.json">openapi.json</a>: the machine-readable interface.</li>
<li><a href="/healthz">/healthz</a>: health of this gateway.</li>
</ul>
</body></html>
`))
