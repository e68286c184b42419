package relay

import (
	"github.com/sekgate/gateway/dataplane/attempt"
	"github.com/sekgate/gateway/dataplane/outcome"
	"github.com/sekgate/gateway/dataplane/proxy"
)

// streamCut is the most output a relayed stream delivers, in tokens (Protocol.maxOutput;
// 0: no bound): the request's output bound. The contract, exact: output is counted from
// what each event shows the client (proxy.Stream.Delivered, tokens.Delivered: the larger
// of the events that carry output and their text's bytes / tokens.OutputBytesPerToken),
// the event that would take the delivered output past the bound is not relayed and ends
// the stream, so the client never receives more output than the bound, and the record
// charges at least what was delivered and at most the bound. The estimate is low, so an
// honest server's stream within its bound is never cut.
func streamCut(ex *attempt.Exchange) int64 {
	if ex.LengthBound <= 0 || ex.Bounds.Output <= 0 {
		return 0
	}
	return ex.Bounds.Output
}

// pastBound reports whether st's current event would take the output delivered past the
// bound (streamCut); it then marks the relay ended by outcome.ErrOutputBound, so the client gets
// its protocol's error event instead of the event, the upstream connection is closed
// (ending the generation), the route's breaker counts nothing, and the record charges
// what was delivered, within the bound.
func (p Protocol) pastBound(st *proxy.Stream, r *Relayed) bool {
	if p.maxOutput <= 0 || st.Delivered().Tokens(p.bytesPerToken) <= p.maxOutput {
		return false
	}
	r.Err = outcome.ErrOutputBound
	return true
}
