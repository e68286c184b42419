package relay

import (
	"bufio"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/attempt"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/outcome"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/dataplane/settle"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/jsonenc"
	"github.com/sekgate/gateway/shared/usage"
)

// end finishes a relayed stream and records it.
//
// A stream that did not complete (an error the server reported inside it, an event that is
// not JSON, usage beyond the bounds, a cut, a timeout) ends with an error event in the
// client's protocol carrying why (outcome.StreamEnd.Message). A provider that broke the protocol has
// its route's breaker count the failure; it and a reported error make the record say
// upstream_error.
//
// A stream that ended in an error is charged by streamCharge, and nothing when it delivered
// no output and reported no usage. The prompt is charged as the provider reported it (in
// its final usage, or in running usage such as vLLM's continuous_usage_stats), within the
// bounds, else from the request's text (reqparse's low estimate, bytes / 5, within the
// window) with routing.usage_estimated set. The output is charged by chargeOutput: the
// larger of what the provider reported and what the client was delivered (proxy.Stream's
// low estimate from the text of every event relayed), within the output limit; a
// provider that reported less than it delivered is flagged (routing.output_underreported).
// A completed or cancelled stream has received its first event, so the provider has
// started generating and the prompt is always charged.
func (s *Relayer) end(ex *attempt.Exchange, w *bufio.Writer, client index.Endpoint, rel Relayed) {
	r := &ex.Stream.Result
	end := outcome.StreamEnd{Upstream: r.Err, Relay: rel.Err, Gone: rel.Gone || ex.Cancelled(), Done: rel.Done}
	result := end.Result()
	s.cfg.Dialects.Learned(ex.Cand.Route, r.Server, r.ServerDetected)
	// Every stream that did not complete ends with its protocol's error event (unless the
	// client went away, or received a terminal event already: the upstream's own on a
	// same-protocol stream, a translated response.incomplete, the drain's error).
	if !rel.Done && !rel.Gone && !rel.Ended && !ex.Cancelled() && !(r.Ended && rel.tr == nil) {
		msg := end.Message()
		if rel.tr != nil {
			_ = rel.tr.Fail(msg)
		} else if _, err := w.Write(streamEndEvent(client, msg, r.ResponseID, rel.Events)); err == nil {
			_ = w.Flush()
		}
	}
	if end.BreaksRoute() {
		if n := len(ex.Box.Routing.Attempts); n > 0 {
			ex.Box.Routing.Attempts[n-1].Error = proxy.FailInvalid
		}
		if s.cfg.Health != nil && ex.Cand.Route != nil {
			_ = s.cfg.Health.Do(ex.Cand.Route, func() error { return routing.ErrRouteFailed })
		}
	}
	rec := &ex.Box.Rec
	var est bool
	var c settle.Output
	if result == usage.ResultOK || result == usage.ResultCancelled {
		rec.PromptTokens = r.PromptTokens
		if !r.PromptReported {
			rec.PromptTokens, est = ex.PromptEstimate, true
		}
		c = settle.ChargeOutput(r.CompletionTokens, r.OutputReported, rel.Out.Tokens(ex.Model.OutputBytesPerToken), ex.Bounds.Output)
	} else {
		rec.PromptTokens, c, est = settle.StreamCharge(r, rel.Out, ex.Model.OutputBytesPerToken, ex.PromptEstimate, ex.Bounds)
	}
	rec.CompletionTokens = c.Tokens
	ex.Box.Routing.UsageEstimated = ex.Box.Routing.UsageEstimated || est || c.Estimated
	c.Flag(&ex.Box.Routing, r.CompletionTokens)
	// The record first, then the upstream: closing a stream that ended cleanly reads the
	// end of the upstream's body so its connection can be reused (proxy.Stream.Close), which
	// may wait a moment, and a node killed meanwhile must not lose the record of a stream
	// its client received whole.
	st, resp := ex.Detach()
	ex.End(200, result)
	st.Close()
	fasthttp.ReleaseResponse(resp)
}

// streamEndEvent is the error event that ends a stream of client endpoint e with msg:
// chat and text completions get a data line with the interface's error envelope (the
// OpenAI SDKs raise it), Messages-style an error event, Responses-style response.failed
// (the protocol's failure end) for response id, with the next sequence number seq.
func streamEndEvent(e index.Endpoint, msg, id string, seq int) []byte {
	ae := apierror.New(502, apierror.TypeUpstream, apierror.CodeProviderError, msg)
	switch e {
	case index.EPMessages:
		return []byte("event: error\ndata: " + string(ae.JSON(true)) + "\n\n")
	case index.EPResponses:
		b := []byte(`event: response.failed` + "\n" + `data: {"type":"response.failed","sequence_number":`)
		b = strconv.AppendInt(b, int64(seq), 10)
		b = append(b, `,"response":{"id":`...)
		b = jsonenc.AppendString(b, id)
		b = append(b, `,"object":"response","status":"failed","error":{"code":"server_error","message":`...)
		b = jsonenc.AppendString(b, msg)
		return append(b, `},"output":[]}}`+"\n\n"...)
	}
	return []byte("data: " + string(ae.JSON(false)) + "\n\n")
}
