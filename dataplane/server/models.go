package server

import (
	"encoding/json"
	"net/url"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/admit"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/plan"
)

type pricingJSON struct {
	Currency  string `json:"currency"`
	InputOre  int64  `json:"input_ore_per_million_tokens"`
	OutputOre int64  `json:"output_ore_per_million_tokens"`
}

type modelJSON struct {
	ID            string      `json:"id"`
	Object        string      `json:"object"`
	Created       int64       `json:"created"`
	OwnedBy       string      `json:"owned_by"`
	Aliases       []string    `json:"aliases"`
	Endpoint      string      `json:"endpoint"`
	Endpoints     []string    `json:"endpoints"`
	Pricing       pricingJSON `json:"pricing"`
	ContextTokens int64       `json:"context_tokens,omitempty"`
	Tokenizer     string      `json:"tokenizer,omitempty"`
}

type serviceNote struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type modelListJSON struct {
	Object  string       `json:"object"`
	Data    []modelJSON  `json:"data"`
	Service *serviceNote `json:"service,omitempty"`
}

func renderModel(m *index.Model, policy string) modelJSON {
	aliases := m.Aliases
	if aliases == nil {
		aliases = []string{}
	}
	eps := m.Endpoints(policy)
	if eps == nil {
		eps = []string{}
	}
	return modelJSON{
		ID: m.ID, Object: "model", Created: max(m.Created, 0), OwnedBy: "service", Aliases: aliases,
		Endpoint: m.Endpoint, Endpoints: eps,
		Pricing:       pricingJSON{Currency: "SEK", InputOre: m.InputOrePerMillion, OutputOre: m.OutputOrePerMillion},
		ContextTokens: max(m.ContextTokens, 0), Tokenizer: m.Tokenizer,
	}
}

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
	out := modelListJSON{Object: "list", Data: make([]modelJSON, 0, len(p.Acct.Visible))}
	for _, m := range p.Acct.Visible {
		out.Data = append(out.Data, renderModel(m, p.Acct.Residency))
	}
	if len(out.Data) == 0 {
		out.Service = &serviceNote{Code: "no_models_available",
			Message: "no model is enabled for this account under its residency policy; ask the operator to enable one"}
	}
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
	m, ok := p.Idx.Model(name)
	if ok {
		_, ok = p.Acct.VisibleModel(m.ID)
	}
	if !ok {
		writeError(ctx, plan.ModelNotFound(p, name))
		return
	}
	writeJSON(ctx, 200, renderModel(m, p.Acct.Residency))
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
