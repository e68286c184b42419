package server

import (
	"errors"

	"github.com/tidwall/sjson"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/dialect"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/outcome"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/translate"
	"github.com/sekgate/gateway/shared/apierror"
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
// c.cands must be m.Candidates(policy, c.e), narrowed by valueCandidates; c.body is set here.
func (s *Server) serveProtocol(ctx *fasthttp.RequestCtx, c *upstreamCall) {
	c.body = translatingBody(c, s.dialects.of)
	ex := s.runAttempts(ctx, c)
	if ex == nil {
		return
	}
	proto := protocol{client: c.e, translate: ex.cand.Translate, model: c.sentModel}
	if proto.translate {
		proto.opt = translateOptions(c, s.dialects.of(ex.cand.Route))
	}
	if c.stream {
		relayStream(ctx, ex, proto)
		return
	}
	out, ok := proto.answer(ex.resp.Body())
	if !ok {
		// The route answered 200 with something the client's protocol cannot carry (a chat
		// completion without choices, tool arguments that are not JSON). The exchange is
		// committed: no other route is tried.
		if len(ex.box.Routing.Attempts) > 0 {
			ex.box.Routing.Attempts[len(ex.box.Routing.Attempts)-1].Error = proxy.FailInvalid
		}
		writeError(ctx, outcome.ErrInvalidUpstream)
		ex.end(outcome.ErrInvalidUpstream.Status, usage.ResultUpstreamError)
		return
	}
	// The usage read (and bounded) by the attempt loop from the upstream's answer; a
	// translated answer carries the same counts.
	ex.box.Rec.PromptTokens, ex.box.Rec.CompletionTokens = ex.usage.InputTokens, ex.usage.OutputTokens
	ctx.SetStatusCode(fasthttp.StatusOK)
	if proto.translate {
		ctx.SetContentType("application/json")
	} else {
		ctx.SetContentTypeBytes(ex.resp.Header.ContentType())
	}
	ctx.SetBody(out)
	ex.end(fasthttp.StatusOK, usage.ResultOK)
}

// translatingBody returns the per-attempt body builder of c: native candidates get the
// client's body with the route's model name; translated ones a chat completions request,
// built once per upstream model name.
func translatingBody(c *upstreamCall, dialectOf func(*index.Route) *dialect.Dialect) func(index.Candidate) ([]byte, *apierror.Error) {
	// The last translated body, by upstream model name and whether it asks for running
	// usage (one variable: one allocation for the closure's state).
	var last struct {
		model      string
		continuous bool
		server     *dialect.Dialect
		body       []byte
	}
	return func(cand index.Candidate) ([]byte, *apierror.Error) {
		r := cand.Route
		if !cand.Translate {
			out, err := proxy.RewriteBody(c.raw, c.sentModel, r.UpstreamModel, false, false, false)
			if err == nil && c.editLengths {
				out, err = proxy.BoundLengths(out, c.lengthBound) // outbound.go
			}
			if err != nil {
				return nil, outcome.ErrBodyEdit
			}
			return out, nil
		}
		continuous := c.stream && r.ContinuousUsageStats
		d := dialectOf(r)
		if last.body != nil && last.model == r.UpstreamModel && last.continuous == continuous && last.server == d {
			return last.body, nil
		}
		var (
			out []byte
			err error
		)
		switch c.e {
		case index.EPMessages:
			out, err = translate.MessagesToChatWith(c.raw, r.UpstreamModel, translate.Options{Dialect: d})
		case index.EPResponses:
			out, err = translate.ResponsesToChatWith(c.raw, r.UpstreamModel, translate.Options{Dialect: d})
		default:
			return nil, errUnsupportedProtocol
		}
		if err != nil {
			return nil, translateRequestError(err)
		}
		if continuous {
			if out, err = sjson.SetBytes(out, "stream_options.continuous_usage_stats", true); err != nil {
				return nil, outcome.ErrBodyEdit
			}
		}
		last.model, last.continuous, last.server, last.body = r.UpstreamModel, continuous, d, out
		return out, nil
	}
}

// translateRequestError maps a request translator's error to the client's 400.
func translateRequestError(err error) *apierror.Error {
	if errors.Is(err, translate.ErrUnsupported) {
		return apierror.New(400, apierror.TypeInvalidRequest, apierror.CodeUnsupportedProtocol,
			"this model's routes serve the request through chat completions, which cannot express it: "+err.Error())
	}
	return apierror.InvalidParam("", "request body cannot be translated for the upstream: "+err.Error())
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
