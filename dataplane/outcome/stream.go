package outcome

import (
	"errors"

	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/shared/usage"
)

// ErrOutputBound ends a relayed stream whose provider generates past the request's output
// bound: the output ends there.
var ErrOutputBound = errors.New("the provider generated past the request's output limit; the output ends there")

// StreamEnd is how a committed stream ended: what the upstream's stream reported (Upstream,
// proxy.StreamResult.Err) and what the relay to the client came to.
type StreamEnd struct {
	Upstream error
	// Relay is why the relay stopped early: ErrOutputBound, a translation failure, nil.
	Relay error
	// Gone: the client went away; Done: the client received the terminal event.
	Gone, Done bool
}

// Result is the record's result of the stream.
func (e StreamEnd) Result() string {
	_, reported := proxy.Reported(e.Upstream)
	switch {
	case e.Gone:
		return usage.ResultCancelled
	case proxy.IsInvalid(e.Upstream) || reported:
		return usage.ResultUpstreamError
	case e.timedOut():
		return usage.ResultTimeout
	case e.Upstream != nil || e.Relay != nil || !e.Done:
		return usage.ResultIncomplete
	}
	return usage.ResultOK
}

func (e StreamEnd) timedOut() bool {
	return errors.Is(e.Upstream, proxy.ErrStreamTimeout) || proxy.Classify(e.Upstream) == proxy.FailTimeout
}

// BreaksRoute reports whether the route's breaker counts the stream as a failure: its
// provider broke the protocol after the first byte.
func (e StreamEnd) BreaksRoute() bool { return proxy.IsInvalid(e.Upstream) }

// Message is what a client whose stream did not complete is told, in the error event
// that ends it.
func (e StreamEnd) Message() string {
	if re, ok := proxy.Reported(e.Upstream); ok {
		return "the provider reported an error: " + Truncate(re.Info.Message, 500) + "; the output is incomplete"
	}
	switch {
	case proxy.IsInvalid(e.Upstream):
		return ErrStreamInvalid.Message
	case e.timedOut():
		return "the provider did not finish in time; the output is incomplete"
	case errors.Is(e.Relay, ErrOutputBound):
		return ErrOutputBound.Error()
	case e.Upstream == nil && e.Relay != nil:
		return "the provider's answer could not be translated; the output is incomplete"
	}
	return "the provider's stream ended before its last event; the output is incomplete"
}
