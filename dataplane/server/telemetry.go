package server

import (
	"time"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/accesslog"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/limits"
	"github.com/sekgate/gateway/dataplane/telemetry"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/usage"
)

// refusedAuth counts an authentication refusal of an inference request by reason: the
// node's country or the account's policy (residency), or the key and account (auth). A
// node without a snapshot (503) is not a refusal of the request.
func (s *Server) refusedAuth(aerr *apierror.Error) {
	switch {
	case aerr.Status == 503:
	case aerr.Code == apierror.CodeResidencyUnsatisfied:
		s.tel.Refused(telemetry.RefuseResidency)
	default:
		s.tel.Refused(telemetry.RefuseAuth)
	}
}

// refusedLimit counts a limiter refusal.
func (s *Server) refusedLimit(d limits.Denial) {
	if d.Reason == limits.Concurrency {
		s.tel.Refused(telemetry.RefuseConcurrency)
		return
	}
	s.tel.Refused(telemetry.RefuseRate)
}

// Attempt outcomes besides the failure classes of proxy.Classify.
const (
	outcomeOK        = "ok"
	outcomeStatus4xx = "status_4xx"
	outcomeStatus429 = "status_429"
	outcomeStatus5xx = "status_5xx"
	outcomeStatus    = "status_other"
)

// statusOutcome names an upstream's non-200 status for gateway_upstream_attempts_total.
func statusOutcome(status int) string {
	switch {
	case status == 429:
		return outcomeStatus429
	case status >= 400 && status < 500:
		return outcomeStatus4xx
	case status >= 500 && status < 600:
		return outcomeStatus5xx
	}
	return outcomeStatus
}

// attemptOutcome names what an upstream attempt came to: ok, its failure class, or its
// status class.
func attemptOutcome(a *usage.Attempt) string {
	switch {
	case a.Error != "":
		return a.Error
	case a.Status == 200:
		return outcomeOK
	}
	return statusOutcome(a.Status)
}

// observe reports a routed request about to be recorded to the metrics and the access log;
// promptPrice is the prompt's side of its price. It runs before the meter takes the record.
func (s *Server) observe(box *recordBox, d time.Duration, promptPrice int64) {
	rec := &box.rec
	s.tel.Observe(&telemetry.Request{Endpoint: box.endpoint, Model: rec.Model, Provider: rec.Provider, Result: rec.Result,
		Status: rec.Status, PromptTokens: rec.PromptTokens, CompletionTokens: rec.CompletionTokens,
		PromptMicroSEK: promptPrice, OutputMicroSEK: rec.PriceMicroSEK - promptPrice,
		Duration: d, Upstream: box.upstream, TTFT: box.ttft, Stream: rec.Stream})
	if s.access == nil {
		return
	}
	e := accesslog.Entry{Time: rec.TS, RequestID: rec.RequestID, AccountID: rec.AccountID, Endpoint: rec.Endpoint,
		Model: rec.Model, Provider: rec.Provider, Region: rec.Residency, NodeRegion: box.routing.NodeRegion,
		Status: rec.Status, Result: rec.Result, Stream: rec.Stream, Attempts: len(box.routing.Attempts),
		PromptTokens: rec.PromptTokens, CompletionTokens: rec.CompletionTokens, PriceMicroSEK: rec.PriceMicroSEK,
		Duration: d, TTFT: box.ttft}
	if rec.KeyID != nil {
		e.KeyID = *rec.KeyID
	}
	if n := len(box.routing.Attempts); n > 0 {
		e.Route = box.routing.Attempts[n-1].Route
	}
	s.access.Write(&e)
}

// userRouted marks a request that reached the attempt loop: its record makes its
// access-log line.
const userRouted = "gateway.routed"

// logRefusal writes the access-log line of an inference request answered without a record
// (refused before routing: authentication, balance, limits, size, invalid input).
func (s *Server) logRefusal(ctx *fasthttp.RequestCtx, start time.Time) {
	path := ctx.Path()
	if !isInferencePath(path) || ctx.UserValue(userRouted) != nil {
		return
	}
	st := ctx.Response.StatusCode()
	e := accesslog.Entry{Time: start, RequestID: requestID(ctx), Endpoint: string(path), Status: st,
		Result: "refused", NodeRegion: s.cfg.Region, Duration: s.now().Sub(start)}
	if st < 300 {
		e.Result = "ok" // not an inference answer (e.g. OPTIONS)
	}
	if c := gjson.GetBytes(ctx.Response.Body(), "error.code"); c.Type == gjson.String {
		e.Error = c.Str
	} else if c := gjson.GetBytes(ctx.Response.Body(), "error.type"); c.Type == gjson.String {
		e.Error = c.Str
	}
	s.access.Write(&e)
}

// isInferencePath reports whether path is one of the inference endpoints.
func isInferencePath(path []byte) bool {
	_, ok := index.EndpointOf(string(path)) // no allocation: the conversion does not escape
	return ok
}
