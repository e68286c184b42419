package server

import (
	"bytes"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/catalog"
)

// unsupportedFamilies are refused with 501 without authentication, with every child path.
var unsupportedFamilies = []string{
	"/v1/assistants", "/v1/audio", "/v1/batches", "/v1/containers", "/v1/conversations", "/v1/evals",
	"/v1/files", "/v1/fine_tuning", "/v1/images", "/v1/moderations", "/v1/organization", "/v1/projects",
	"/v1/realtime", "/v1/threads", "/v1/uploads", "/v1/vector_stores", "/v1/videos",
}

func (s *Server) routes() *router.Router {
	r := router.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleMethodNotAllowed = true
	r.HandleOPTIONS = true
	r.GlobalOPTIONS = func(ctx *fasthttp.RequestCtx) { ctx.SetStatusCode(fasthttp.StatusNoContent) }
	r.MethodNotAllowed = func(ctx *fasthttp.RequestCtx) { writeError(ctx, errMethodNotAllowed) }
	r.NotFound = s.notFound
	r.PanicHandler = func(ctx *fasthttp.RequestCtx, v any) {
		s.log.Error("panic in handler", "panic", v, "path", string(ctx.Path()))
		writeError(ctx, errInternal)
	}

	r.GET("/healthz", s.healthz)
	r.HEAD("/healthz", s.healthz)
	r.GET("/v1/models", s.listModels)
	r.HEAD("/v1/models", s.listModels)
	// A catch-all takes aliases with a literal slash as well as %2F (the router matches the
	// raw path, so %2F reaches the handler encoded).
	r.GET("/v1/models/{model:*}", s.getModel)
	r.HEAD("/v1/models/{model:*}", s.getModel)

	for _, e := range []catalog.Endpoint{catalog.EPChat, catalog.EPCompletions, catalog.EPEmbeddings,
		catalog.EPResponses, catalog.EPMessages, catalog.EPSystemOne} {
		r.POST(e.Path(), s.inference(e))
	}
	r.POST("/v1/messages/count_tokens", s.countTokens)

	// Stored-object operations are not offered.
	for _, p := range []string{"/v1/chat/completions/{rest:*}", "/v1/responses/{rest:*}"} {
		for _, m := range []string{fasthttp.MethodGet, fasthttp.MethodPost, fasthttp.MethodDelete} {
			r.Handle(m, p, s.unsupported)
		}
	}
	for _, f := range unsupportedFamilies {
		r.ANY(f, s.unsupported)
		r.ANY(f+"/{rest:*}", s.unsupported)
	}

	r.GET("/v1/service/account", s.forwardAuthed)
	r.HEAD("/v1/service/account", s.forwardAuthed)
	r.GET("/v1/service/requests", s.forwardAuthed)
	r.GET("/v1/service/requests/{id}", s.forwardAuthed)
	r.POST("/v1/service/topup", s.forwardAuthed)
	r.POST("/v1/service/signup", s.forwardPublic)
	r.POST("/v1/stripe/webhook", s.forwardPublic)

	if s.cfg.Register != nil {
		s.cfg.Register(r)
	}
	return r
}

func (s *Server) healthz(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("text/plain; charset=utf-8")
	ctx.SetBodyString("ok")
}

func (s *Server) notFound(ctx *fasthttp.RequestCtx) {
	p := ctx.Path()
	for _, f := range unsupportedFamilies {
		if bytes.HasPrefix(p, []byte(f)) && (len(p) == len(f) || p[len(f)] == '/') {
			s.unsupported(ctx)
			return
		}
	}
	writeError(ctx, errEndpointNotFound)
}

func (s *Server) unsupported(ctx *fasthttp.RequestCtx) { writeError(ctx, s.notSupported) }
