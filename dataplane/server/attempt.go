package server

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/admit"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/limits"
	"github.com/sekgate/gateway/dataplane/loadstat"
	"github.com/sekgate/gateway/dataplane/outcome"
	"github.com/sekgate/gateway/dataplane/plan"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/reqparse"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/dataplane/settle"
	"github.com/sekgate/gateway/dataplane/tokens"
	"github.com/sekgate/gateway/dataplane/tracing"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/usage"
)

// exchange is an upstream answer the attempt loop committed to: status 200 with a
// complete, valid JSON body (resp), or for streams the event-stream response with its
// first event read (stream). The handler writes the client's answer, sets the record's
// token counts, and calls end exactly once (from the stream writer for streams).
type exchange struct {
	s   *Server
	box *settle.Box // &boxStore
	// boxStore is the request's record: it lives as long as the exchange, which end
	// returns to its pool after handing the record to the meter.
	boxStore settle.Box
	m        *index.Model
	cand     index.Candidate
	up       *proxy.Upstream
	resp     *fasthttp.Response
	stream   *proxy.Stream
	start    time.Time
	ticket   admit.Ticket // the request's slot, fair-queue share and price hold
	// usage is the bounded usage of a committed non-streaming answer (its upstream
	// protocol's usage object).
	usage  tokens.Usage
	bounds tokens.Bounds
	// lengthBound is the output bound per choice (plan.Call; 0: not a generation).
	lengthBound int64
	// promptEstimate: see plan.Call.
	promptEstimate int64
	call           proxy.Call
	// startRec and startRouting hold a stream's start entry while it is handed to the meter
	// (here rather than in the record box: exchanges are pooled).
	startRec     usage.Record
	startRouting usage.Routing
	watch        clientWatch
	plan         [8]index.Candidate
	// attemptSpan is the last attempt's span when the request is traced.
	attemptSpan tracing.Child
	// took is the last attempt's wait on its upstream (until the answer, a stream's first
	// event or the failure); negative when the attempt called no upstream.
	took time.Duration
	// load is the committed route's load state, counted off at end (nil: none kept).
	load *loadstat.Route
}

var exchangePool = sync.Pool{New: func() any { return &exchange{} }}

// runAttempts applies the account's and key's limits, then tries the eligible routes in order
// (priority, then weighted random; routes whose circuit breaker is open are skipped) until
// one answers, at most MaxAttempts attempts within RequestTimeout. Failures before the
// first byte reaches the client (connect errors, timeouts, 429, 502, 503, 504, invalid
// answers) move on to the next route; a client error (e.g. 400 from the provider) does not.
//
// It returns the committed exchange, or nil after it has answered the client with the
// error and recorded the request itself. X-Service-Provider and X-Service-Residency name
// the route tried last (the one that answered on success).
func (s *Server) runAttempts(ctx *fasthttp.RequestCtx, c *plan.Call) *exchange {
	if len(c.Cands) == 0 {
		// Candidates there were (a model without any is answered before, wrongEndpoint);
		// none speaks the request's protocol natively.
		writeError(ctx, plan.ErrUnsupportedProtocol)
		return nil
	}
	t, aerr := s.admit.Admit(ctx, &admit.Request{P: c.P, Model: c.Model, Endpoint: c.Endpoint, Cands: c.Cands, Bounds: c.Bounds})
	if aerr != nil {
		writeError(ctx, aerr)
		return nil
	}
	ex, plan := s.startExchange(ctx, c, t)
	// Deadlines are the network's (fasthttp compares them with the wall clock); the
	// durations recorded use the injected clock (s.now), as the request's own does.
	deadline := time.Now().Add(s.cfg.RequestTimeout)
	var last outcome.Failure
	tried, skipped, unreachable := 0, 0, true // unreachable: every route skipped is known unreachable
	for _, cand := range plan {
		if tried >= s.cfg.MaxAttempts || ex.call.Cancelled() {
			break
		}
		if !time.Now().Before(deadline) {
			last = outcome.Of(outcome.Expired)
			break
		}
		var f outcome.Failure
		ex.took = -1
		ld := s.routeLoad(cand.Route)
		err := s.cfg.Health.Do(cand.Route, func() error {
			f = s.attempt(ctx, ex, c, cand, deadline)
			return f.Breaker()
		})
		ex.countLoad(ld, !f.Failed() && err == nil, c.Stream)
		if err == routing.ErrOpen {
			skipped++
			unreachable = unreachable && s.cfg.Health.Unreachable(cand.Route)
			continue // breaker open: not tried
		}
		if ex.took >= 0 {
			ex.endAttemptSpan()
			ex.box.Upstream += ex.took
			s.tel.Attempt(cand.Route.Provider, attemptOutcome(&ex.box.Routing.Attempts[len(ex.box.Routing.Attempts)-1]), ex.took, tried > 0)
		}
		tried++
		if !f.Failed() {
			ex.cand = cand
			ex.box.Routing.Translated = cand.Translate
			if c.Stream {
				ex.box.TTFT = s.now().Sub(c.Start)
			}
			return ex
		}
		last = f
		if !f.Retry() {
			break
		}
	}
	s.answerNoAttempt(ctx, ex, tried, skipped > 0 && unreachable, last)
	return nil
}

// startExchange takes an exchange for the admitted call: its record started, the client's
// connection watched, and the routes ordered into the failover plan.
func (s *Server) startExchange(ctx *fasthttp.RequestCtx, c *plan.Call, t admit.Ticket) (*exchange, []index.Candidate) {
	ex := exchangePool.Get().(*exchange)
	ex.s, ex.m, ex.start, ex.ticket = s, c.Model, c.Start, t
	queued := t.Queued
	ex.box = &ex.boxStore
	var keyID *string
	if c.P.Key.ID != "" { // console test-box requests have no key: key_id null
		keyID = &c.P.Key.ID
	}
	ex.box.Start(settle.Who{RequestID: requestID(ctx), At: c.Start, AccountID: c.P.Acct.ID, KeyID: keyID,
		Model: c.Model.ID, Endpoint: c.Endpoint, Stream: c.Stream, Policy: c.P.Acct.Residency, NodeRegion: s.cfg.Region})
	if s.access != nil || s.tracer != nil {
		s.routed(ctx, ex.box) // the record makes the access-log line and ends the span
	}
	ex.bounds, ex.promptEstimate, ex.lengthBound = c.Bounds, c.PromptEstimate, c.LengthBound
	if !s.cfg.DisableClientWatch {
		ex.watch.start(ctx.Conn(), &ex.call, s.cfg.ClientWatchDelay)
	}
	now := c.Start
	if queued > 0 {
		now = s.now()
	}
	plan, dec := s.cfg.Selector.Order(ex.plan[:0], c.Cands, routing.Request{Key: c.Key, HasKey: c.HasKey,
		PrefixBytes: c.PrefixBytes, Mode: routing.ModeOf(c.Model.Routing), Now: now.UnixNano(), Held: queued > 0})
	rt := &ex.box.Routing
	rt.Balancer, rt.Reason, rt.InFlight, rt.ServerQueue = dec.Mode.String(), dec.Reason, dec.InFlight, max(dec.Waiting, 0)
	rt.QueuedMS = queued.Milliseconds()
	return ex, plan
}

// answerNoAttempt answers a request no route served: cancelled, every eligible route's
// breaker open (known unreachable, or recovering), or the last attempt's failure.
func (s *Server) answerNoAttempt(ctx *fasthttp.RequestCtx, ex *exchange, tried int, unreachable bool, last outcome.Failure) {
	switch {
	case ex.call.Cancelled():
		ex.end(outcome.StatusClientClosed, usage.ResultCancelled)
		return
	case tried == 0 && !last.Failed() && unreachable:
		// Every eligible route failed to connect until its breaker opened: nothing was
		// forwarded, and nothing will be until the operator brings the servers back.
		last = outcome.Of(outcome.Unreachable)
	case tried == 0 && !last.Failed():
		// Every eligible route is recovering (breaker open): nothing was forwarded.
		last = outcome.Of(outcome.Recovering).WithClient(
			outcome.ErrNoRoute.WithRetryAfter(limits.RetryAfterSeconds(s.cfg.Health.RetryAfter())))
	}
	writeError(ctx, last.Client())
	ex.end(last.Status(), last.Result())
}

// attempt makes one try at candidate cand.
func (s *Server) attempt(ctx *fasthttp.RequestCtx, ex *exchange, c *plan.Call, cand index.Candidate, deadline time.Time) outcome.Failure {
	r := cand.Route
	ue := plan.UpstreamEndpoint(c.Endpoint, cand)
	var body []byte
	var berr *apierror.Error
	if c.Body != nil && ex.box.Trace.Traced() {
		sp := ex.box.Trace.Start("translate", ex.box.Rec.RequestID)
		body, berr = c.UpstreamBody(cand)
		sp.End(errorCode(berr))
	} else {
		body, berr = c.UpstreamBody(cand)
	}
	if berr == nil {
		body, berr = c.Salted(body, ue, s.dialects.Of(cand.Route))
	}
	if berr != nil {
		return outcome.Of(outcome.BodyRefused).WithClient(berr)
	}
	att := ex.box.AddAttempt(r)
	ctx.Response.Header.Set("X-Service-Provider", r.Provider)
	ctx.Response.Header.Set("X-Service-Residency", r.Region)

	up := s.cfg.Pool.For(r)
	ureq := fasthttp.AcquireRequest()
	uresp := fasthttp.AcquireResponse()
	up.Prepare(ureq, r, ue, body, ex.box.Rec.RequestID, c.Stream)
	if ex.box.Trace.Traced() {
		ex.attemptSpan = ex.box.Trace.StartAttempt(ex.box.Rec.RequestID, r.ID, r.Provider, &ureq.Header)
	}
	t0 := s.now()
	dl := time.Now().Add(up.TotalTimeout())
	if deadline.Before(dl) {
		dl = deadline
	}
	err := up.Do(ureq, uresp, c.Stream, dl, &ex.call)
	fasthttp.ReleaseRequest(ureq)
	ex.took = s.now().Sub(t0)
	att.DurationMS = ex.took.Milliseconds()
	if err != nil {
		fasthttp.ReleaseResponse(uresp)
		f := outcome.Classify(err, nil)
		att.Error = f.AttemptError()
		if f.Class() != outcome.Cancelled && s.log.Enabled(context.Background(), slog.LevelDebug) {
			s.log.Debug("upstream attempt failed", "request_id", ex.box.Rec.RequestID, "route", r.ID, "class", f.String(), "err", err)
		}
		return f
	}
	status := uresp.StatusCode()
	att.Status = status
	if status != fasthttp.StatusOK {
		f := outcome.Classify(nil, uresp)
		_ = uresp.CloseBodyStream()
		fasthttp.ReleaseResponse(uresp)
		return f
	}
	if !c.Stream {
		// A 200 must be a JSON body whose usage is possible for this request: anything else
		// is an invalid answer (the next route is tried; a last one answers 502, uncharged).
		rb := uresp.Body()
		var members reqparse.EventMembers
		// Depth-bounded (gjson's validator alone is recursive); the scan also notes where
		// the answer's members are, for its usage.
		u, valid := tokens.Usage{}, jsonContentType(uresp.Header.ContentType()) && reqparse.ScanEvent(rb, &members)
		reported := false
		var delivered int64
		bound := c.Bounds.Output // the record's output bound, once the answer is taken
		if valid {
			u, reported = tokens.FromBody(ue, rb, &members)
			answer := tokens.DeliveredAnswer(ue, rb)
			delivered = answer.Tokens(c.Model.OutputBytesPerToken)
			in, out := u.InputTokens, u.OutputTokens
			var inBound bool
			u.InputTokens, u.OutputTokens, inBound = c.Bounds.Check(in, out)
			if !inBound && !u.Invalid && in >= 0 && in <= c.Bounds.Prompt && out > c.Bounds.Output && out <= usage.MaxRecordTokens {
				// Output past the bound: the server generated it (a length field of its own),
				// so it is charged as reported, up to what the answer holds (outbound.go).
				u.OutputTokens, inBound = settle.OverBoundOutput(out, c.Bounds.Output, answer.Holds()), true
				bound = u.OutputTokens
			}
			// An answer holding more output than the bound is refused, never delivered: it
			// could not be charged for in full.
			valid = inBound && !u.Invalid && delivered <= bound
		}
		if !valid {
			fasthttp.ReleaseResponse(uresp)
			f := outcome.Of(outcome.Invalid)
			att.Error = f.AttemptError()
			return f
		}
		ex.bounds.Output = bound // the record's bound (inference.go's record)
		if !reported {
			// No usage in the answer: the prompt is estimated from the request.
			u.InputTokens = c.PromptEstimate
		}
		ch := settle.ChargeOutput(u.OutputTokens, reported, delivered, bound)
		ch.Flag(&ex.box.Routing, u.OutputTokens)
		u.OutputTokens = ch.Tokens
		ex.box.Routing.UsageEstimated = ex.box.Routing.UsageEstimated || !reported || ch.Estimated
		if ue == index.EPChat {
			s.dialects.Learn(r, rb)
		}
		ex.up, ex.resp, ex.usage = up, uresp, u
		return outcome.Failure{}
	}
	if !bytes.HasPrefix(uresp.Header.ContentType(), []byte("text/event-stream")) {
		_ = uresp.CloseBodyStream()
		fasthttp.ReleaseResponse(uresp)
		f := outcome.Of(outcome.Invalid)
		att.Error = f.AttemptError()
		return f
	}
	st := proxy.OpenStream(uresp, ue, proxy.StreamOptions{
		DropUsageOnly: c.Stream && !c.IncludeUsage && !cand.Translate && ue == c.Endpoint,
		StripRunningUsage: !cand.Translate && ue == c.Endpoint && cand.Route.ContinuousUsageStats &&
			(ue == index.EPChat || ue == index.EPCompletions) && !plan.ClientAskedRunningUsage(c.Raw),
		Total:           time.Until(dl),
		Bounds:          c.Bounds,
		Dialect:         s.dialects.Of(cand.Route),
		MirrorReasoning: !cand.Translate && ue == index.EPChat,
		Detect:          ue == index.EPChat && s.dialects.Detecting(cand.Route),
	})
	if err := st.Peek(); err != nil {
		st.Close()
		fasthttp.ReleaseResponse(uresp)
		ex.took = s.now().Sub(t0)
		att.DurationMS = ex.took.Milliseconds()
		f := outcome.Of(outcome.Cancelled)
		if !ex.call.Cancelled() {
			f = outcome.Classify(err, nil) // a server's error as its first event, too
		}
		att.Error = f.AttemptError()
		return f
	}
	ex.took = s.now().Sub(t0)
	att.DurationMS = ex.took.Milliseconds()
	ex.up, ex.resp, ex.stream = up, uresp, st
	return outcome.Failure{}
}

// end records the request with status and result (token counts already set on the
// record), releases the upstream response, the limits ticket and the client watch, and
// returns the exchange to its pool. It must be called exactly once per exchange.
func (ex *exchange) end(status int, result string) {
	ex.watch.stop()
	if ex.stream != nil {
		ex.stream.Close()
	}
	if ex.resp != nil {
		fasthttp.ReleaseResponse(ex.resp)
	}
	ex.call.Done()
	ex.ticket.Release()
	if ex.load != nil {
		ex.endLoad()
	}
	ex.s.settle.Record(ex.box, ex.m, ex.bounds, ex.start, status, result)
	ex.ticket.Settled()             // the hold, after the record's price counts
	*ex = exchange{watch: ex.watch} // keep the watch's timer and state
	exchangePool.Put(ex)
}

// cancelled reports whether the client went away during the exchange.
func (ex *exchange) cancelled() bool { return ex.call.Cancelled() }

// jsonContentType reports whether a 200 answer's Content-Type says JSON
// (application/json, application/problem+json, ...). An absent one is accepted: some
// servers omit it, and the body is validated anyway.
func jsonContentType(ct []byte) bool {
	return len(ct) == 0 || bytes.Contains(ct, []byte("json"))
}
