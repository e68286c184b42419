package settle

import (
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/tokens"
	"github.com/sekgate/gateway/shared/usage"
)

// Output is the output a record charges: the larger of what the provider reported and
// what the client was delivered (tokens.Delivered.Tokens), within the bound. Estimated is
// set when the charge is not the reported count (nothing reported, or less than
// delivered), Underreported when delivered exceeds reported by more than
// underreportTolerance.
type Output struct {
	Tokens                   int64
	Estimated, Underreported bool
}

// ChargeOutput is the one output rule.
func ChargeOutput(reported int64, wasReported bool, delivered, bound int64) Output {
	if !wasReported {
		return Output{Tokens: min(delivered, bound), Estimated: true}
	}
	if delivered <= reported {
		return Output{Tokens: min(reported, bound)}
	}
	return Output{Tokens: min(delivered, bound), Estimated: true,
		Underreported: delivered-reported > underreportTolerance(reported)}
}

// underreportTolerance is how far the delivered estimate may exceed the reported output
// before a record is flagged (routing.output_underreported): a tenth, and at least 2.
func underreportTolerance(reported int64) int64 { return max(2, reported/10) }

// Flag marks a record's routing when o found the provider under-reporting.
func (o Output) Flag(rt *usage.Routing, reported int64) {
	if o.Underreported {
		rt.OutputUnderreported, rt.ReportedOutput = true, reported
	}
}

// OverBoundOutput is the output charged for a non-streaming answer whose reported output
// is over the request's bound (a server that read a length field of its own): what it
// reports, up to what the answer holds (the larger of the bound and the estimate of its
// text), and never over what one record may hold.
func OverBoundOutput(reported, bound, estimate int64) int64 {
	return min(reported, max(bound, estimate), usage.MaxRecordTokens)
}

// StreamCharge applies the one rule for a stream that ended without completing (an error
// the server reported, a cut, a timeout, an invalid event): the prompt as reported, else
// estimated from the request; the output by ChargeOutput; and a stream that delivered no
// generated output and reported no usage is not charged.
func StreamCharge(r *proxy.StreamResult, out tokens.Delivered, bytesPerToken int, promptEstimate int64, b tokens.Bounds) (in int64, o Output, estimated bool) {
	if !r.PromptReported && !r.OutputReported && out == (tokens.Delivered{}) {
		return 0, Output{}, false
	}
	in = r.PromptTokens
	if !r.PromptReported {
		in, estimated = promptEstimate, true
	}
	return in, ChargeOutput(r.CompletionTokens, r.OutputReported, out.Tokens(bytesPerToken), b.Output), estimated
}
