package server

import (
	"bytes"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
)

// unsupportedFamilies are refused with 501 without authentication, with every child path.
var unsupportedFamilies = []string{
	"/v1/assistants", "/v1/audio", "/v1/batches", "/v1/containers", "/v1/conversations", "/v1/evals",
	"/v1/files", "/v1/fine_tuning", "/v1/images", "/v1/moderations", "/v1/organization", "/v1/projects",
	"/v1/realtime", "/v1/threads", "/v1/uploads", "/v1/vector_stores", "/v1/videos",
}

// storedObjectPrefixes are the stored-object operations of supported endpoints (stored
// completions and their messages, stored responses and their children): every method on a
// child path is refused with 501, without authentication.
var storedObjectPrefixes = []string{"/v1/chat/completions", "/v1/responses"}

// Allowed-method sets. Their order is the document's x-gateway-allow (a test compares them).
const (
	allowRead   = "GET, HEAD, OPTIONS"
	allowPost   = "POST, OPTIONS"
	allowSignup = "POST" // the interface: other methods of the signup form return 405
)

// endpoint is one supported path with its handlers per method. Methods without a handler
// answer 405 method_not_allowed with Allow; OPTIONS answers 204 with Allow unless options
// is false.
type endpoint struct {
	path      string
	allow     string
	get, post fasthttp.RequestHandler
	// head, when nil and get is set, runs get; fasthttp drops the body of HEAD answers, so
	// status and headers (Content-Length included) are those of GET.
	head    fasthttp.RequestHandler
	options bool
}

// endpoints lists every supported path of the interface.
func (s *Server) endpoints() []endpoint {
	eps := []endpoint{
		{path: "/healthz", allow: allowRead, get: s.healthz, options: true},
		{path: "/openapi.json", allow: allowRead, get: s.openAPI, options: true},
		{path: "/docs", allow: allowRead, get: s.docs, options: true},
		{path: "/v1/models", allow: allowRead, get: s.listModels, options: true},
		// A catch-all takes aliases with a literal slash as well as %2F (the router matches
		// the raw path, so %2F reaches the handler encoded). DELETE here is 405: model
		// lifecycle belongs to the operator.
		{path: "/v1/models/{model:*}", allow: allowRead, get: s.getModel, options: true},
	}
	for _, e := range []index.Endpoint{index.EPChat, index.EPCompletions, index.EPEmbeddings,
		index.EPResponses, index.EPMessages, index.EPSystemOne} {
		eps = append(eps, endpoint{path: e.Path(), allow: allowPost, post: s.inference(e), options: true})
	}
	eps = append(eps,
		endpoint{path: "/v1/messages/count_tokens", allow: allowPost, post: s.countTokens, options: true},
		// Account reads are forwarded to the control plane; HEAD is forwarded as GET so the
		// control plane needs no HEAD routes, and the body is dropped on the way out.
		endpoint{path: "/v1/service/account", allow: allowRead, get: s.forwardAccount, head: headAsGet(s.forwardAccount), options: true},
		endpoint{path: "/v1/service/requests", allow: allowRead, get: s.forwardAuthed, head: headAsGet(s.forwardAuthed), options: true},
		endpoint{path: "/v1/service/requests/{id}", allow: allowRead, get: s.forwardAuthed, head: headAsGet(s.forwardAuthed), options: true},
		endpoint{path: "/v1/service/topup", allow: allowPost, post: s.forwardAuthed, options: true},
		// The signup form is POST only: OPTIONS is 405 like every other method.
		endpoint{path: "/v1/service/signup", allow: allowSignup, post: s.forwardPublic},
		endpoint{path: "/v1/stripe/webhook", allow: allowPost, post: s.forwardPublic, options: true},
	)
	return eps
}

func (s *Server) routes() *router.Router {
	r := router.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	// Allowed methods, OPTIONS and 405 are answered per endpoint below (the router's own
	// answers would list methods in another order and grant OPTIONS on the signup form).
	r.HandleMethodNotAllowed = false
	r.HandleOPTIONS = false
	r.NotFound = s.notFound
	r.PanicHandler = func(ctx *fasthttp.RequestCtx, v any) {
		s.log.Error("panic in handler", "panic", v, "path", string(ctx.Path()))
		writeError(ctx, errInternal)
	}

	for _, e := range s.endpoints() {
		if e.get != nil {
			r.GET(e.path, e.get)
			head := e.head
			if head == nil {
				head = e.get
			}
			r.HEAD(e.path, head)
		}
		if e.post != nil {
			r.POST(e.path, e.post)
		}
		// The method-agnostic tree is searched after the method's own: every other method
		// lands here.
		r.ANY(e.path, otherMethods(e.allow, e.options))
	}

	// Stored-object operations and unsupported families: every method, every child path.
	for _, p := range storedObjectPrefixes {
		r.ANY(p+"/{rest:*}", s.unsupported)
	}
	for _, f := range unsupportedFamilies {
		r.ANY(f, s.unsupported)
		r.ANY(f+"/{rest:*}", s.unsupported)
	}

	if s.cfg.Register != nil {
		s.cfg.Register(r)
	}
	return r
}

// otherMethods answers methods an endpoint has no handler for: OPTIONS with 204 and Allow
// (when the endpoint offers it), anything else with 405 and Allow. No Access-Control-*
// header is ever sent: a browser preflight gets the same 204 and no cross-origin grant.
func otherMethods(allow string, options bool) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		ctx.Response.Header.Set(fasthttp.HeaderAllow, allow)
		if options && ctx.IsOptions() {
			ctx.SetStatusCode(fasthttp.StatusNoContent)
			return
		}
		writeError(ctx, errMethodNotAllowed)
	}
}

// headAsGet runs a GET handler for a HEAD request (for handlers that forward the method),
// then restores HEAD so the server drops the body.
func headAsGet(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		ctx.Request.Header.SetMethod(fasthttp.MethodGet)
		h(ctx)
		ctx.Request.Header.SetMethod(fasthttp.MethodHead)
	}
}

func (s *Server) healthz(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("text/plain; charset=utf-8")
	ctx.SetBodyString("ok")
}

func (s *Server) notFound(ctx *fasthttp.RequestCtx) {
	p := ctx.Path()
	if string(p) == "/" && (ctx.IsGet() || ctx.IsHead()) && !wantsJSON(ctx) {
		s.landing(ctx)
		return
	}
	for _, f := range unsupportedFamilies {
		if bytes.HasPrefix(p, []byte(f)) && (len(p) == len(f) || p[len(f)] == '/') {
			s.unsupported(ctx)
			return
		}
	}
	s.endpointNotFound(ctx)
}

// unsupported refuses an unsupported family or stored-object operation: 501 with a
// documentation link, before authentication, forwarding, storing or billing.
func (s *Server) unsupported(ctx *fasthttp.RequestCtx) {
	if s.notSupported.DocURL != "" {
		writeError(ctx, s.notSupported)
		return
	}
	writeError(ctx, errNotSupported.WithDoc(s.selfURL(ctx, "/openapi.json")))
}
