package server

import (
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/outcome"
	"github.com/sekgate/gateway/dataplane/plan"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/translate"
	"github.com/sekgate/gateway/shared/usage"
)

// This file serves the protocols beyond chat, text completions and embeddings:
// Messages-style (/v1/messages), Responses-style (/v1/responses) and the decision model
// (/v1/systemone). They go through the same attempt loop (runAttempts) as every inference
// request; what differs is per attempt and per answer:
//
//   - On a route that speaks the client's protocol natively, the body passes byte for byte
//     (the model name rewritten only when the route's upstream name differs) and the answer
//     comes back unchanged; only its usage is read.
//   - On a chat-only route that allows translation (index.Candidate.Translate), the body
//     is rebuilt as a chat completions request for that route's upstream model, and the
//     chat answer, whole or streamed, is translated back (dataplane/translate). The record's
//     routing.translated is set.
//
// The anthropic-version header is not checked: the gateway speaks one Messages-style
// dialect and accepts whatever version an SDK sends (2023-06-01 from the v1 Go SDK,
// 2026-10-21 from v2, and later ones), so SDK upgrades do not break clients. Native routes
// receive no anthropic-version header either (the upstream request carries only the
// gateway's own headers).

// protocol is how one committed exchange answers the client.
type protocol struct {
	// client is the endpoint the client called.
	client index.Endpoint
	// translate is set when the answering route was reached through chat completions.
	translate bool
	// model is the model name the client sent; translated answers carry it.
	model string
	// opt are a translated answer's options: the answering route's dialect, the request's
	// stop sequences.
	opt translate.Options
	// maxOutput ends a relayed stream before an event that takes the output delivered past
	// the request's output bound, in tokens (0: none; set by relayTracked): outbound.go.
	maxOutput int64
	// bytesPerToken is the model's output_bytes_per_token (0: the default), with which
	// maxOutput counts.
	bytesPerToken int
}

// servesOwnProtocol reports whether endpoint e is served by serveProtocol rather than the
// plain pass-through.
func servesOwnProtocol(e index.Endpoint) bool {
	return e == index.EPMessages || e == index.EPResponses || e == index.EPSystemOne
}

// serveProtocol forwards a Messages-style, Responses-style or decision-model request on
// every eligible candidate, native or translated, and answers the client in its protocol.
// c.Cands must be m.Candidates(policy, c.Endpoint), narrowed by valueCandidates; c.Body is set here.
func (s *Server) serveProtocol(ctx *fasthttp.RequestCtx, c *plan.Call) {
	c.Body = plan.TranslatingBody(c, s.dialects.Of)
	ex := s.attempts(ctx, c)
	if ex == nil {
		return
	}
	proto := protocol{client: c.Endpoint, translate: ex.Cand.Translate, model: c.SentModel}
	if proto.translate {
		proto.opt = plan.TranslateOptions(c, s.dialects.Of(ex.Cand.Route))
	}
	if c.Stream {
		s.relayStream(ctx, ex, proto)
		return
	}
	out, ok := proto.answer(ex.Resp.Body())
	if !ok {
		// The route answered 200 with something the client's protocol cannot carry (a chat
		// completion without choices, tool arguments that are not JSON). The exchange is
		// committed: no other route is tried.
		if len(ex.Box.Routing.Attempts) > 0 {
			ex.Box.Routing.Attempts[len(ex.Box.Routing.Attempts)-1].Error = proxy.FailInvalid
		}
		writeError(ctx, outcome.ErrInvalidUpstream)
		ex.End(outcome.ErrInvalidUpstream.Status, usage.ResultUpstreamError)
		return
	}
	// The usage read (and bounded) by the attempt loop from the upstream's answer; a
	// translated answer carries the same counts.
	ex.Box.Rec.PromptTokens, ex.Box.Rec.CompletionTokens = ex.Usage.InputTokens, ex.Usage.OutputTokens
	ctx.SetStatusCode(fasthttp.StatusOK)
	if proto.translate {
		ctx.SetContentType("application/json")
	} else {
		ctx.SetContentTypeBytes(ex.Resp.Header.ContentType())
	}
	ctx.SetBody(out)
	ex.End(fasthttp.StatusOK, usage.ResultOK)
}

// answer turns the upstream's complete 200 body (valid JSON, checked by the attempt loop)
// into the client's body. ok is false when the body is not a usable answer.
func (p protocol) answer(rb []byte) (out []byte, ok bool) {
	if !p.translate {
		return rb, true
	}
	var err error
	switch p.client {
	case index.EPMessages:
		out, _, err = translate.ChatToMessagesResponseWith(rb, p.model, p.opt)
	case index.EPResponses:
		out, _, err = translate.ChatToResponsesResponseWith(rb, p.model, p.opt)
	default:
		return nil, false
	}
	return out, err == nil
}
