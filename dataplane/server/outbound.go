package server

import (
	"errors"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/reqparse"
	"github.com/sekgate/gateway/dataplane/sse"
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

// streamCut is the number of generation events after which a relayed stream's next
// event carrying output is cut (protocol.maxDeltas; 0: never): the output bound, plus room
// for the events Stream.Delta counts that carry no output (each further choice's role
// chunk, an empty first chunk some servers send), so a stream within its bound is never
// cut. The record charges within the bound either way.
func streamCut(ex *exchange) int64 {
	if ex.lengthBound <= 0 || ex.bounds.Output <= 0 {
		return 0
	}
	return ex.bounds.Output + ex.bounds.Output/ex.lengthBound + 4
}

// pastBound reports whether st's current event carries output past the cut (streamCut);
// it then marks the relay ended by errOutputBound, so the client gets its protocol's error
// event, the upstream connection is closed (ending the generation), the route's breaker
// counts nothing, and the record charges what was delivered, within the bound. Events are
// looked into only past the cut.
func (p protocol) pastBound(st *proxy.Stream, ev sse.Event, r *relayed) bool {
	if p.maxDeltas <= 0 || r.deltas < p.maxDeltas || !st.Delta() || !carriesOutput(ev) {
		return false
	}
	r.err = errOutputBound
	return true
}

// carriesOutput reports whether a generation event carries output: named events
// (Messages-style content_block_delta, Responses-style *.delta) always do; a chat or text
// completion chunk when a choice has text, content, reasoning or a tool call in it.
func carriesOutput(ev sse.Event) bool {
	if len(ev.Name) > 0 {
		return true
	}
	found := false
	gjson.GetBytes(ev.Data, "choices").ForEach(func(_, c gjson.Result) bool {
		if c.Get("text").String() != "" {
			found = true
			return false
		}
		d := c.Get("delta")
		for _, f := range []string{"content", "reasoning_content", "reasoning"} {
			if d.Get(f).String() != "" {
				found = true
				return false
			}
		}
		if tc := d.Get("tool_calls"); tc.IsArray() && len(tc.Array()) > 0 {
			found = true
			return false
		}
		return true
	})
	return found
}
