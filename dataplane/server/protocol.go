package server

import (
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/plan"
	"github.com/sekgate/gateway/dataplane/relay"
)

// This file serves the protocols beyond chat, text completions and embeddings:
// Messages-style (/v1/messages), Responses-style (/v1/responses) and the decision model
// (/v1/systemone). They go through the same attempt loop (attempt.Runner.Run) as every inference
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
	p := relay.Protocol{Client: c.Endpoint, Translate: ex.Cand.Translate, Model: c.SentModel}
	if p.Translate {
		p.Opt = plan.TranslateOptions(c, s.dialects.Of(ex.Cand.Route))
	}
	s.answer(ctx, ex, c.Stream, p)
}
