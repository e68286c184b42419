package attempt

import (
	"bytes"
	"context"
	"log/slog"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/outcome"
	"github.com/sekgate/gateway/dataplane/plan"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/reqparse"
	"github.com/sekgate/gateway/dataplane/settle"
	"github.com/sekgate/gateway/dataplane/tokens"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/usage"
)

// try makes one attempt at candidate cand: the zero Failure when its answer is committed
// to ex.
func (r *Runner) try(ctx *fasthttp.RequestCtx, ex *Exchange, c *plan.Call, cand index.Candidate, deadline time.Time) outcome.Failure {
	rt := cand.Route
	ue := plan.UpstreamEndpoint(c.Endpoint, cand)
	body, berr := r.body(ex, c, cand, ue)
	if berr != nil {
		return outcome.Of(outcome.BodyRefused).WithClient(berr)
	}
	att := ex.Box.AddAttempt(rt)
	ctx.Response.Header.Set("X-Service-Provider", rt.Provider)
	ctx.Response.Header.Set("X-Service-Residency", rt.Region)

	up := r.cfg.Pool.For(rt)
	ureq := fasthttp.AcquireRequest()
	uresp := fasthttp.AcquireResponse()
	up.Prepare(ureq, rt, ue, body, ex.Box.Rec.RequestID, c.Stream)
	if ex.Box.Trace.Traced() {
		ex.attemptSpan = ex.Box.Trace.StartAttempt(ex.Box.Rec.RequestID, rt.ID, rt.Provider, &ureq.Header)
	}
	t0 := r.cfg.Now()
	dl := time.Now().Add(up.TotalTimeout())
	if deadline.Before(dl) {
		dl = deadline
	}
	err := up.Do(ureq, uresp, c.Stream, dl, &ex.call)
	fasthttp.ReleaseRequest(ureq)
	ex.took = r.cfg.Now().Sub(t0)
	att.DurationMS = ex.took.Milliseconds()
	if err != nil {
		fasthttp.ReleaseResponse(uresp)
		f := outcome.Classify(err, nil)
		att.Error = f.AttemptError()
		if f.Class() != outcome.Cancelled && r.cfg.Logger.Enabled(context.Background(), slog.LevelDebug) {
			r.cfg.Logger.Debug("upstream attempt failed", "request_id", ex.Box.Rec.RequestID, "route", rt.ID, "class", f.String(), "err", err)
		}
		return f
	}
	att.Status = uresp.StatusCode()
	if att.Status != fasthttp.StatusOK {
		f := outcome.Classify(nil, uresp)
		_ = uresp.CloseBodyStream()
		fasthttp.ReleaseResponse(uresp)
		return f
	}
	if !c.Stream {
		f := r.takeAnswer(ex, c, rt, ue, uresp)
		if f.Failed() {
			fasthttp.ReleaseResponse(uresp)
			att.Error = f.AttemptError()
			return f
		}
		ex.Resp = uresp
		return f
	}
	f := r.openStream(ex, c, cand, ue, uresp, dl, t0)
	att.Error, att.DurationMS = f.AttemptError(), ex.took.Milliseconds()
	return f
}

// body builds the attempt's upstream body (traced when the request is and the body is
// translated), with the call's cache salt for servers that honour one.
func (r *Runner) body(ex *Exchange, c *plan.Call, cand index.Candidate, ue index.Endpoint) ([]byte, *apierror.Error) {
	var body []byte
	var berr *apierror.Error
	if c.Body != nil && ex.Box.Trace.Traced() {
		sp := ex.Box.Trace.Start("translate", ex.Box.Rec.RequestID)
		body, berr = c.UpstreamBody(cand)
		sp.End(errorCode(berr))
	} else {
		body, berr = c.UpstreamBody(cand)
	}
	if berr != nil {
		return nil, berr
	}
	return c.Salted(body, ue, r.cfg.Dialects.Of(cand.Route))
}

// takeAnswer takes a whole 200 answer: it must be a JSON body whose usage is possible for
// this request, and hold no more output than can be charged; anything else is an invalid
// answer (the next route is tried; a last one answers 502, uncharged). The usage taken is
// charged by settle.ChargeOutput.
func (r *Runner) takeAnswer(ex *Exchange, c *plan.Call, rt *index.Route, ue index.Endpoint, uresp *fasthttp.Response) outcome.Failure {
	rb := uresp.Body()
	var members reqparse.EventMembers
	// Depth-bounded (gjson's validator alone is recursive); the scan also notes where the
	// answer's members are, for its usage.
	if !jsonContentType(uresp.Header.ContentType()) || !reqparse.ScanEvent(rb, &members) {
		return outcome.Of(outcome.Invalid)
	}
	u, reported := tokens.FromBody(ue, rb, &members)
	answer := tokens.DeliveredAnswer(ue, rb)
	delivered := answer.Tokens(c.Model.OutputBytesPerToken)
	bound := c.Bounds.Output // the record's output bound, once the answer is taken
	in, out := u.InputTokens, u.OutputTokens
	var inBound bool
	u.InputTokens, u.OutputTokens, inBound = c.Bounds.Check(in, out)
	if !inBound && !u.Invalid && in >= 0 && in <= c.Bounds.Prompt && out > c.Bounds.Output && out <= usage.MaxRecordTokens {
		// Output past the bound: the server generated it (a length field of its own), so it
		// is charged as reported, up to what the answer holds.
		u.OutputTokens, inBound = settle.OverBoundOutput(out, c.Bounds.Output, answer.Holds()), true
		bound = u.OutputTokens
	}
	// An answer holding more output than the bound is refused, never delivered: it could
	// not be charged for in full.
	if !inBound || u.Invalid || delivered > bound {
		return outcome.Of(outcome.Invalid)
	}
	ex.Bounds.Output = bound
	if !reported {
		u.InputTokens = c.PromptEstimate // no usage in the answer: estimated from the request
	}
	ch := settle.ChargeOutput(u.OutputTokens, reported, delivered, bound)
	ch.Flag(&ex.Box.Routing, u.OutputTokens)
	u.OutputTokens = ch.Tokens
	ex.Box.Routing.UsageEstimated = ex.Box.Routing.UsageEstimated || !reported || ch.Estimated
	if ue == index.EPChat {
		r.cfg.Dialects.Learn(rt, rb)
	}
	ex.Usage = u
	return outcome.Failure{}
}

// openStream opens a 200 event stream and reads its first event: the zero Failure when the
// stream is committed to ex.
func (r *Runner) openStream(ex *Exchange, c *plan.Call, cand index.Candidate, ue index.Endpoint, uresp *fasthttp.Response, dl, t0 time.Time) outcome.Failure {
	if !bytes.HasPrefix(uresp.Header.ContentType(), []byte("text/event-stream")) {
		_ = uresp.CloseBodyStream()
		fasthttp.ReleaseResponse(uresp)
		return outcome.Of(outcome.Invalid)
	}
	st := proxy.OpenStream(uresp, ue, proxy.StreamOptions{
		DropUsageOnly: c.Stream && !c.IncludeUsage && !cand.Translate && ue == c.Endpoint,
		StripRunningUsage: !cand.Translate && ue == c.Endpoint && cand.Route.ContinuousUsageStats &&
			(ue == index.EPChat || ue == index.EPCompletions) && !plan.ClientAskedRunningUsage(c.Raw),
		Total:           time.Until(dl),
		Bounds:          c.Bounds,
		Dialect:         r.cfg.Dialects.Of(cand.Route),
		MirrorReasoning: !cand.Translate && ue == index.EPChat,
		Detect:          ue == index.EPChat && r.cfg.Dialects.Detecting(cand.Route),
	})
	err := st.Peek()
	ex.took = r.cfg.Now().Sub(t0)
	if err != nil {
		st.Close()
		fasthttp.ReleaseResponse(uresp)
		if ex.call.Cancelled() {
			return outcome.Of(outcome.Cancelled)
		}
		return outcome.Classify(err, nil) // a server's error as its first event, too
	}
	ex.Resp, ex.Stream = uresp, st
	return outcome.Failure{}
}

// jsonContentType reports whether a 200 answer's Content-Type says JSON
// (application/json, application/problem+json, ...). An absent one is accepted: some
// servers omit it, and the body is validated anyway.
func jsonContentType(ct []byte) bool {
	return len(ct) == 0 || bytes.Contains(ct, []byte("json"))
}

// errorCode is aerr's code, or "" for nil.
func errorCode(aerr *apierror.Error) string {
	if aerr == nil {
		return ""
	}
	return aerr.Code
}
