package relay

import (
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/attempt"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/outcome"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/usage"
)

// Answer answers with the committed whole answer of ex in protocol p, and records the
// request. A same-protocol chat answer carries its reasoning under both names clients read
// and a finish reason clients know. A route that answered 200 with something the client's
// protocol cannot carry (a chat completion without choices, tool arguments that are not
// JSON) gets the returned error as the client's answer: the exchange is committed, so no
// other route is tried.
func (s *Relayer) Answer(ctx *fasthttp.RequestCtx, ex *attempt.Exchange, p Protocol) *apierror.Error {
	out, ok := p.answer(ex.Resp.Body())
	if !ok {
		if a := ex.Box.LastAttempt(); a != nil {
			a.Error = proxy.FailInvalid
		}
		ex.End(outcome.ErrInvalidUpstream.Status, usage.ResultUpstreamError)
		return outcome.ErrInvalidUpstream
	}
	if !p.Translate && p.Client == index.EPChat {
		out, _ = proxy.MirrorReasoning(nil, out, "message") // both names: clients read either
		out, _ = proxy.NormalizeFinish(nil, out, s.cfg.Dialects.Of(ex.Cand.Route).FinishStop)
	}
	// The usage read (and bounded) by the attempts from the upstream's answer; a
	// translated answer carries the same counts.
	ex.Box.Rec.PromptTokens, ex.Box.Rec.CompletionTokens = ex.Usage.InputTokens, ex.Usage.OutputTokens
	ctx.SetStatusCode(fasthttp.StatusOK)
	if p.Translate {
		ctx.SetContentType("application/json")
	} else {
		ctx.SetContentTypeBytes(ex.Resp.Header.ContentType())
	}
	ctx.SetBody(out)
	ex.End(fasthttp.StatusOK, usage.ResultOK)
	return nil
}
