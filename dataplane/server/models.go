package server

import (
	"encoding/json"
	"net/url"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/admit"
	"github.com/sekgate/gateway/dataplane/modellist"
	"github.com/sekgate/gateway/dataplane/plan"
)

// authedRead authenticates a model read and sets X-Service-Policy.
func (s *Server) authedRead(ctx *fasthttp.RequestCtx) (admit.Principal, bool) {
	p, aerr := s.admit.Authenticate(ctx, false, true)
	if p.Acct != nil {
		ctx.Response.Header.Set("X-Service-Policy", p.Acct.Residency)
	}
	if aerr != nil {
		writeError(ctx, aerr)
		return p, false
	}
	return p, true
}

func (s *Server) listModels(ctx *fasthttp.RequestCtx) {
	p, ok := s.authedRead(ctx)
	if !ok {
		return
	}
	out := modellist.Of(p.Acct)
	writeJSON(ctx, 200, out)
}

func (s *Server) getModel(ctx *fasthttp.RequestCtx) {
	p, ok := s.authedRead(ctx)
	if !ok {
		return
	}
	raw, _ := ctx.UserValue("model").(string)
	name, err := url.PathUnescape(raw)
	if err != nil || name == "" {
		writeError(ctx, plan.ErrModelNotFound)
		return
	}
	m, ok := plan.Resolve(p, name)
	if !ok {
		writeError(ctx, plan.ModelNotFound(p, name))
		return
	}
	writeJSON(ctx, 200, modellist.Model(m, p.Acct.Residency))
}

func writeJSON(ctx *fasthttp.RequestCtx, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(ctx, errInternal)
		return
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}
