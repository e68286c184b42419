package server

import (
	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/admit"
	"github.com/sekgate/gateway/dataplane/attempt"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/outcome"
	"github.com/sekgate/gateway/dataplane/plan"
	"github.com/sekgate/gateway/dataplane/relay"
	"github.com/sekgate/gateway/dataplane/reqparse"
	"github.com/sekgate/gateway/dataplane/telemetry"
)

// admitted authenticates an inference request and checks the balance (admit.Inference),
// and sets X-Service-Policy.
func (s *Server) admitted(ctx *fasthttp.RequestCtx, allowXAPIKey bool) (admit.Principal, bool) {
	p, aerr := s.admit.Inference(ctx, allowXAPIKey)
	if p.Acct != nil {
		ctx.Response.Header.Set("X-Service-Policy", p.Acct.Residency)
	}
	if aerr != nil {
		writeError(ctx, aerr)
		return p, false
	}
	return p, true
}

// countRefusal counts the request of p if it was refused before routing: an error answer
// that names no route (routed answers carry X-Service-Provider and make a record).
func (s *Server) countRefusal(ctx *fasthttp.RequestCtx, p admit.Principal) {
	st := ctx.Response.StatusCode()
	if s.cfg.Refusals == nil || st < 400 || len(ctx.Response.Header.Peek("X-Service-Provider")) > 0 {
		return
	}
	code := gjson.GetBytes(ctx.Response.Body(), "error.code").String()
	s.cfg.Refusals.Add(p.Acct.ID, p.Key.ID, st, code)
}

// inference returns the handler of one of the six inference endpoints: admission, body
// checks and candidates, then the endpoint's own protocol path (serveProtocol) or the
// pass-through of a request its routes speak natively.
func (s *Server) inference(e index.Endpoint) fasthttp.RequestHandler {
	allowXAPIKey := e == index.EPMessages
	return func(ctx *fasthttp.RequestCtx) {
		start := s.now()
		p, ok := s.admitted(ctx, allowXAPIKey)
		if p.Acct != nil && p.Key != nil {
			defer s.countRefusal(ctx, p)
		}
		if !ok {
			return
		}
		limit, tooLarge := MaxBodySize, errTooLarge
		if e == index.EPSystemOne {
			limit, tooLarge = maxSystemOneBody, errTooLargeSystemOne
		}
		bb := bodyBufs.Get()
		body, ok := s.readBody(ctx, limit, tooLarge, bb)
		// A stream's relay runs after this handler returns and may still refer to a body
		// read into bb; anything else is over when it returns.
		keep := false
		defer func() {
			if !keep {
				bodyBufs.Put(bb)
			}
		}()
		if !ok {
			if ctx.Response.StatusCode() == fasthttp.StatusRequestEntityTooLarge {
				s.tel.Refused(telemetry.RefuseSize)
			}
			return
		}
		req, perr := reqparse.Parse(e.Path(), body)
		if perr != nil {
			writeError(ctx, perr)
			return
		}
		if e == index.EPEmbeddings || e == index.EPSystemOne {
			req.Stream = false
		}
		keep = req.Stream && len(*bb) > 0
		if servesOwnProtocol(e) {
			var c plan.Call
			if aerr := c.Make(p, e, &req, body, start); aerr != nil {
				writeError(ctx, aerr)
				return
			}
			s.serveProtocol(ctx, &c) // Messages-style, Responses-style, decision model (protocol.go)
			return
		}
		// A separate variable: the protocol path lets its call escape (a body builder holds
		// it); the pass-through call stays on the stack.
		var c plan.Call
		if aerr := c.Make(p, e, &req, body, start); aerr != nil {
			writeError(ctx, aerr)
			return
		}
		s.passThrough(ctx, &c)
	}
}

// passThrough forwards a same-protocol request on the routes that speak its protocol
// natively (translated candidates are served by the translation handlers) and relays the
// answer unchanged.
func (s *Server) passThrough(ctx *fasthttp.RequestCtx, c *plan.Call) {
	c.Cands = plan.NativeCandidates(c.Cands)
	if ex := s.attempts(ctx, c); ex != nil {
		s.answer(ctx, ex, c.Stream, relay.Protocol{Client: c.Endpoint})
	}
}

// answer relays the committed exchange ex in protocol p: as a stream, or as a whole answer.
func (s *Server) answer(ctx *fasthttp.RequestCtx, ex *attempt.Exchange, stream bool, p relay.Protocol) {
	if stream {
		s.relay.Stream(ctx, ex, p)
		return
	}
	if aerr := s.relay.Answer(ctx, ex, p); aerr != nil {
		writeError(ctx, aerr)
	}
}

// countTokens answers /v1/messages/count_tokens: no route supports it, so a visible model
// gets 400 unsupported_protocol; a positive balance is still required.
func (s *Server) countTokens(ctx *fasthttp.RequestCtx) {
	p, ok := s.admitted(ctx, true)
	if !ok {
		return
	}
	// reqparse applies every count_tokens rule and bounds nesting before any recursive
	// parser sees the client's bytes.
	body, ok := s.readBody(ctx, MaxBodySize, errTooLarge, nil)
	if !ok {
		return
	}
	req, perr := reqparse.Parse(reqparse.EndpointCountTokens, body)
	if perr != nil {
		writeError(ctx, perr)
		return
	}
	if _, ok := plan.Resolve(p, req.Model); !ok {
		writeError(ctx, plan.ModelNotFound(p, req.Model))
		return
	}
	writeError(ctx, plan.ErrNoTokenCounting)
}

// attempts admits a planned request and runs its attempts (admit, then attempt): the
// committed exchange, or nil once the client has its answer (a refusal, or the failure of
// a request no route served, which is recorded).
func (s *Server) attempts(ctx *fasthttp.RequestCtx, c *plan.Call) *attempt.Exchange {
	if len(c.Cands) == 0 {
		// Candidates there were (a model without any is answered by plan); none speaks
		// the request's protocol natively.
		writeError(ctx, plan.ErrUnsupportedProtocol)
		return nil
	}
	t, aerr := s.admit.Admit(ctx, &admit.Request{P: c.P, Model: c.Model, Endpoint: c.Endpoint, Cands: c.Cands, Bounds: c.Bounds})
	if aerr != nil {
		writeError(ctx, aerr)
		return nil
	}
	ex, f := s.runner.Run(ctx, c, t, requestID(ctx))
	if f.Failed() && f.Class() != outcome.Cancelled {
		writeError(ctx, f.Client())
	}
	return ex
}
