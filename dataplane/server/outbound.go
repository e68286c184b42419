package server

import (
	"errors"
	"strconv"

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

// errOutputBound ends a relayed stream whose provider generates past the request's output
// bound (a server that read no length field the gateway bounds).
var errOutputBound = errors.New("the provider generated past the request's output limit; the output ends there")

// streamCut is the most generation outputs a relayed stream delivers (protocol.maxDeltas;
// 0: no bound): the request's output bound. The contract, exact: outputs are counted as
// the output estimate counts them (proxy.Stream.Deltas: each choice of a chunk that
// carries output, each Messages or Responses delta event; one token each), the event that
// would take the outputs delivered past the bound is not relayed and ends the stream, so
// the client never receives more output than the record charges (the estimate, when the
// upstream reported no output), and the record charges at most the bound. Events without
// output (role chunks, a finish_reason, usage) never count, so a stream that holds its
// bound is not cut.
func streamCut(ex *exchange) int64 {
	if ex.lengthBound <= 0 || ex.bounds.Output <= 0 {
		return 0
	}
	return ex.bounds.Output
}

// pastBound reports whether st's current event would take the outputs delivered past the
// bound (streamCut); it then marks the relay ended by errOutputBound, so the client gets
// its protocol's error event instead of the event, the upstream connection is closed
// (ending the generation), the route's breaker counts nothing, and the record charges
// what was delivered, within the bound.
func (p protocol) pastBound(st *proxy.Stream, r *relayed) bool {
	if p.maxDeltas <= 0 || r.deltas+st.Deltas() <= p.maxDeltas {
		return false
	}
	r.err = errOutputBound
	return true
}
