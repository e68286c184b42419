package server

import (
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/telemetry"
	"github.com/sekgate/gateway/shared/money"
)

// holdMaxPrice holds the request's maximum price (its token bounds at the model's prices:
// the most its record can cost) against the account's balance when the account's limits,
// or the deployment's defaults, ask for it (snapshot.Limits.HoldMaxPrice): false when the
// balance the node knows, less what its requests in flight hold, does not cover it. The
// exchange releases the hold once the record is priced (exchange.end). On refusal the
// client has its 402.
func (s *Server) holdMaxPrice(ctx *fasthttp.RequestCtx, c *upstreamCall) (int64, bool) {
	l := c.p.acct.Limits
	if l == nil {
		l = &c.p.idx.Snapshot.DefaultLimits
	}
	h, ok := s.cfg.Meter.(Holder)
	if !l.HoldMaxPrice || !ok {
		return 0, true
	}
	out := c.bounds.Output
	if c.e == index.EPEmbeddings {
		out = 0 // embeddings bill input tokens only (record)
	}
	amt := money.Price(c.bounds.Prompt, out, c.m.InputOrePerMillion, c.m.OutputOrePerMillion)
	if amt <= 0 {
		return 0, true
	}
	if !h.Hold(c.p.acct.ID, amt) {
		s.tel.Refused(telemetry.RefuseBalance)
		writeError(ctx, errBalance)
		return 0, false
	}
	return amt, true
}
