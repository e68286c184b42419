package settle

import (
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/sekgate/gateway/dataplane/accesslog"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/telemetry"
	"github.com/sekgate/gateway/dataplane/tokens"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/usage"
)

// Meter takes the records (dataplane/meter).
type Meter interface {
	// Record hands a finished request's record to metering. It must be fast and must not
	// block; rec (and what it points to) is reused once Record returns.
	Record(rec *usage.Record)
	// Start takes the start entry of a stream about to be committed: the record the
	// request gets if the node dies before the stream ends (result interrupted). The
	// stream's Record supersedes it. Like Record it must be fast; rec may be reused after
	// it returns.
	Start(rec *usage.Record)
}

// Settler prices records and hands them over.
type Settler struct {
	Meter     Meter
	Telemetry *telemetry.Metrics
	Access    *accesslog.Log // nil: no access log
	Now       func() time.Time
}

// Price is what prompt and completion tokens of model m cost on endpoint (micro-SEK): the
// billed output (none for embeddings), the total and its input part.
func Price(m *index.Model, endpoint string, prompt, completion int64) (billedOut, total, input int64) {
	if endpoint == index.EPEmbeddings.Path() {
		completion = 0
	}
	total, input = money.PriceParts(prompt, completion, m.InputOrePerMillion, m.OutputOrePerMillion)
	return completion, total, input
}

// Record prices the record in box and hands it over, with status and result, for a request
// of model m that arrived at start. Token counts are bounded here once more (b), so no
// path can price more than the request made possible. The box's record is the meter's
// from here.
func (s *Settler) Record(box *Box, m *index.Model, b tokens.Bounds, start time.Time, status int, result string) {
	rec := &box.Rec
	rec.Status = status
	rec.Result = result
	rec.PromptTokens, rec.CompletionTokens, _ = b.Check(rec.PromptTokens, rec.CompletionTokens)
	var promptPrice int64
	rec.CompletionTokens, rec.PriceMicroSEK, promptPrice = Price(m, rec.Endpoint, rec.PromptTokens, rec.CompletionTokens)
	d := s.Now().Sub(start)
	rec.DurationMS = d.Milliseconds()
	if box.TTFT > 0 { // rounded up: a measured time is never 0
		rec.TTFTMS = (box.TTFT + time.Millisecond - 1).Milliseconds()
	}
	s.observe(box, d, promptPrice)
	if box.Trace.Traced() {
		s.recordTraced(box)
		return
	}
	s.Meter.Record(rec)
}

// Start hands the meter a stream's start entry st (a copy of its record, owned by the
// caller until the stream's end): the record the request gets if the node dies while the
// stream runs: result interrupted, the prompt tokens the first event reported or the
// estimate, no output beyond what was reported, priced.
func (s *Settler) Start(st *usage.Record, rt *usage.Routing, m *index.Model, b tokens.Bounds, r StartUsage) {
	st.Status, st.Result, st.DurationMS = 200, usage.ResultInterrupted, 0
	st.PromptTokens, st.CompletionTokens = r.Prompt, 0
	if !r.PromptReported {
		st.PromptTokens = r.PromptEstimate
		rt.UsageEstimated = true
	}
	if r.OutputReported {
		st.CompletionTokens = r.Output
	}
	st.PromptTokens, st.CompletionTokens, _ = b.Check(st.PromptTokens, st.CompletionTokens)
	st.CompletionTokens, st.PriceMicroSEK, _ = Price(m, st.Endpoint, st.PromptTokens, st.CompletionTokens)
	st.Routing = rt
	s.Meter.Start(st)
}

// StartUsage is what a stream's first event reported, and the prompt's estimate.
type StartUsage struct {
	Prompt, Output                 int64
	PromptReported, OutputReported bool
	PromptEstimate                 int64
}

// observe counts the record in the metrics and writes its access-log line.
func (s *Settler) observe(box *Box, d time.Duration, promptPrice int64) {
	rec := &box.Rec
	s.Telemetry.Observe(&telemetry.Request{Endpoint: box.Endpoint, Model: rec.Model, Provider: rec.Provider, Result: rec.Result,
		Status: rec.Status, PromptTokens: rec.PromptTokens, CompletionTokens: rec.CompletionTokens,
		PromptMicroSEK: promptPrice, OutputMicroSEK: rec.PriceMicroSEK - promptPrice,
		Duration: d, Upstream: box.Upstream, TTFT: box.TTFT, Stream: rec.Stream,
		Underreported: box.Routing.OutputUnderreported})
	if s.Access == nil {
		return
	}
	e := accesslog.Entry{Time: rec.TS, RequestID: rec.RequestID, AccountID: rec.AccountID, Endpoint: rec.Endpoint,
		Model: rec.Model, Provider: rec.Provider, Region: rec.Residency, NodeRegion: box.Routing.NodeRegion,
		Status: rec.Status, Result: rec.Result, Stream: rec.Stream, Attempts: len(box.Routing.Attempts),
		PromptTokens: rec.PromptTokens, CompletionTokens: rec.CompletionTokens, PriceMicroSEK: rec.PriceMicroSEK,
		Duration: d, TTFT: box.TTFT}
	if rec.KeyID != nil {
		e.KeyID = *rec.KeyID
	}
	if a := box.LastAttempt(); a != nil {
		e.Route = a.Route
	}
	s.Access.Write(&e)
}

// recordTraced hands over the record of a traced request, with a span for the spool
// write, and ends the request's span.
func (s *Settler) recordTraced(box *Box) {
	rec := &box.Rec
	attrs := []attribute.KeyValue{attribute.String("gateway.model", rec.Model), attribute.String("gateway.provider", rec.Provider),
		attribute.String("gateway.result", rec.Result), attribute.Int("gateway.attempts", len(box.Routing.Attempts)),
		attribute.Int64("gateway.prompt_tokens", rec.PromptTokens), attribute.Int64("gateway.completion_tokens", rec.CompletionTokens),
		attribute.Int64("gateway.price_micro_sek", rec.PriceMicroSEK), attribute.Bool("gateway.stream", rec.Stream)}
	status, tr := rec.Status, box.Trace
	sp := tr.Start("spool write", rec.RequestID)
	s.Meter.Record(rec) // the meter owns rec from here
	sp.End("")
	tr.End(status, attrs...)
}
