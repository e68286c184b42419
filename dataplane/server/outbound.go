package server

import (
	"strconv"

	"github.com/sekgate/gateway/dataplane/outcome"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/reqparse"
	"github.com/sekgate/gateway/dataplane/tokens"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/usage"
)

// recordBoundError refuses a generation request whose output bound (its choices times its
// output limit, or the model's window without one) is over what one record may hold
// (usage.MaxRecordTokens): the control plane would refuse its record, and it would be served
// without a charge.
func recordBoundError(req *reqparse.Request, window int64) *apierror.Error {
	b := tokens.NewBounds(window, req.MaxTokens, 1)
	n := max(1, req.Choices)
	if b.WithChoices(n).Output <= usage.MaxRecordTokens {
		return nil
	}
	param := "max_tokens"
	if req.Choices > 1 {
		param = "n"
	}
	return apierror.InvalidParam(param, "the number of choices ("+strconv.FormatInt(n, 10)+") times the output limit ("+
		strconv.FormatInt(b.Output, 10)+" tokens) is over "+strconv.FormatInt(usage.MaxRecordTokens, 10)+
		" tokens, the most one request may generate; set a lower max_tokens or n")
}

// overBoundOutput is the output charged for a non-streaming answer whose reported output is
// over the request's bound (a server that read a length field of its own): what it reports,
// up to what the answer holds (the larger of the bound and the estimate of its text), and
// never over what one record may hold.
func overBoundOutput(reported, bound, estimate int64) int64 {
	return min(reported, max(bound, estimate), usage.MaxRecordTokens)
}

// streamCut is the most output a relayed stream delivers, in tokens (protocol.maxOutput;
// 0: no bound): the request's output bound. The contract, exact: output is counted from
// what each event shows the client (proxy.Stream.Delivered, tokens.Delivered: the larger
// of the events that carry output and their text's bytes / tokens.OutputBytesPerToken),
// the event that would take the delivered output past the bound is not relayed and ends
// the stream, so the client never receives more output than the bound, and the record
// charges at least what was delivered and at most the bound. The estimate is low, so an
// honest server's stream within its bound is never cut.
func streamCut(ex *exchange) int64 {
	if ex.lengthBound <= 0 || ex.bounds.Output <= 0 {
		return 0
	}
	return ex.bounds.Output
}

// pastBound reports whether st's current event would take the output delivered past the
// bound (streamCut); it then marks the relay ended by outcome.ErrOutputBound, so the client gets
// its protocol's error event instead of the event, the upstream connection is closed
// (ending the generation), the route's breaker counts nothing, and the record charges
// what was delivered, within the bound.
func (p protocol) pastBound(st *proxy.Stream, r *relayed) bool {
	if p.maxOutput <= 0 || st.Delivered().Tokens(p.bytesPerToken) <= p.maxOutput {
		return false
	}
	r.err = outcome.ErrOutputBound
	return true
}

// outputCharge is the output a record charges: the larger of what the provider reported and what
// the client was delivered (tokens.Delivered.Tokens), within the bound. estimated is set
// when the charge is not the reported count (nothing reported, or less than delivered),
// underreported when delivered exceeds reported by more than underreportTolerance.
type outputCharge struct {
	out                      int64
	estimated, underreported bool
}

func chargeOutput(reported int64, wasReported bool, delivered, bound int64) outputCharge {
	if !wasReported {
		return outputCharge{out: min(delivered, bound), estimated: true}
	}
	if delivered <= reported {
		return outputCharge{out: min(reported, bound)}
	}
	return outputCharge{out: min(delivered, bound), estimated: true,
		underreported: delivered-reported > underreportTolerance(reported)}
}

// underreportTolerance is how far the delivered estimate may exceed the reported output
// before a record is flagged (routing.output_underreported): a tenth, and at least 2.
func underreportTolerance(reported int64) int64 { return max(2, reported/10) }

// flag marks a record's routing when c found the provider under-reporting.
func (c outputCharge) flag(rt *usage.Routing, reported int64) {
	if c.underreported {
		rt.OutputUnderreported, rt.ReportedOutput = true, reported
	}
}
