package admit

import (
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/telemetry"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/money"
)

// holdMaxPrice holds the request's maximum price (its token bounds at the model's prices:
// the most its record can cost) against the account's balance when the account's limits,
// or the deployment's defaults, ask for it (snapshot.Limits.HoldMaxPrice): 402 when the
// balance the node knows, less what its requests in flight hold, does not cover it. The
// ticket releases the hold once the record is priced (Ticket.Settled).
func (s *Admitter) holdMaxPrice(r *Request) (int64, *apierror.Error) {
	p := r.P
	l := p.Acct.Limits
	if l == nil {
		l = &p.Idx.Snapshot.DefaultLimits
	}
	if !l.HoldMaxPrice || s.cfg.Holder == nil {
		return 0, nil
	}
	out := r.Bounds.Output
	if r.Endpoint == index.EPEmbeddings {
		out = 0 // embeddings bill input tokens only (settle.Price)
	}
	amt := money.Price(r.Bounds.Prompt, out, r.Model.InputOrePerMillion, r.Model.OutputOrePerMillion)
	if amt <= 0 {
		return 0, nil
	}
	if !s.cfg.Holder.Hold(p.Acct.ID, amt) {
		s.cfg.Telemetry.Refused(telemetry.RefuseBalance)
		return 0, ErrBalance
	}
	return amt, nil
}
