package telemetry

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/meter"
)

var chatRequest = Request{Endpoint: index.EPChat, Model: "m1", Provider: "p1", Result: "ok", Status: 200,
	PromptTokens: 12, CompletionTokens: 3, PromptMicroSEK: 120, OutputMicroSEK: 45,
	Duration: 3 * time.Millisecond, Upstream: 2 * time.Millisecond}

// Observe and Attempt find their series in the cache: no allocation once a label
// combination was seen (the request path's budget in dataplane/server relies on it).
func TestHotPathAllocationFree(t *testing.T) {
	m := New()
	r := chatRequest
	m.Observe(&r)
	m.Attempt("p1", "ok", time.Millisecond, false)
	if n := testing.AllocsPerRun(1000, func() {
		m.Observe(&r)
		m.Attempt("p1", "ok", time.Millisecond, true)
		m.Refused(RefuseRate)
		m.StreamOpened()
		m.StreamClosed()
	}); n != 0 {
		t.Fatalf("%.1f allocations per request", n)
	}
	var nilM *Metrics // metrics off
	nilM.Observe(&r)
	nilM.Attempt("p1", "ok", 0, false)
	nilM.Refused(RefuseAuth)
}

func TestExposition(t *testing.T) {
	m := New()
	for range 3 {
		r := chatRequest
		m.Observe(&r)
	}
	stream := chatRequest
	stream.Stream, stream.TTFT, stream.Result, stream.Status, stream.Provider = true, 5*time.Millisecond, "incomplete", 200, "p2"
	m.Observe(&stream)
	noRoute := Request{Endpoint: index.EPMessages, Model: "m1", Result: "no_route", Status: 503}
	m.Observe(&noRoute)
	m.Refused(RefuseSize)
	m.BreakerChanged("r1", "closed", "open")
	m.WatchSpool(stubSpool{meter.Stats{SpoolRecords: 4, DeadLetters: 1}})(10, 20*time.Millisecond)
	m.WatchSnapshots(func() (int64, time.Time, bool) { return 9, time.Now().Add(-time.Minute), true }, nil)(nil)
	m.WatchBreakers(stubBreakers{"r1": "open", "r2": "closed"})
	want := `
# HELP gateway_requests_total Routed inference requests (one per usage record), by endpoint, model, provider that answered last (none: no attempt), status class and record result.
# TYPE gateway_requests_total counter
gateway_requests_total{endpoint="/v1/chat/completions",model="m1",provider="p1",result="ok",status_class="2xx"} 3
gateway_requests_total{endpoint="/v1/chat/completions",model="m1",provider="p2",result="incomplete",status_class="2xx"} 1
gateway_requests_total{endpoint="/v1/messages",model="m1",provider="none",result="no_route",status_class="5xx"} 1
# HELP gateway_spend_micro_sek_total Micro-SEK charged in usage records, by model and kind (prompt, completion); the kinds add up to the records' prices.
# TYPE gateway_spend_micro_sek_total counter
gateway_spend_micro_sek_total{kind="completion",model="m1"} 180
gateway_spend_micro_sek_total{kind="prompt",model="m1"} 480
# HELP gateway_admission_refusals_total Inference requests refused before any upstream was tried, by reason.
# TYPE gateway_admission_refusals_total counter
gateway_admission_refusals_total{reason="auth"} 0
gateway_admission_refusals_total{reason="balance"} 0
gateway_admission_refusals_total{reason="budget"} 0
gateway_admission_refusals_total{reason="concurrency"} 0
gateway_admission_refusals_total{reason="rate"} 0
gateway_admission_refusals_total{reason="residency"} 0
gateway_admission_refusals_total{reason="size"} 1
# HELP gateway_route_breaker_state Circuit-breaker state per route: 0 closed, 1 half-open, 2 open (a route ID with several base URLs reports its worst).
# TYPE gateway_route_breaker_state gauge
gateway_route_breaker_state{route="r1"} 2
gateway_route_breaker_state{route="r2"} 0
# HELP gateway_route_breaker_transitions_total Circuit-breaker state changes per route, by the state entered (closed, half-open, open).
# TYPE gateway_route_breaker_transitions_total counter
gateway_route_breaker_transitions_total{route="r1",to="open"} 1
# HELP gateway_spool_records Usage records spooled and not yet confirmed by the control plane.
# TYPE gateway_spool_records gauge
gateway_spool_records 4
# HELP gateway_usage_dead_letter_records_total Usage records the control plane refused permanently, kept in dead-letter segments.
# TYPE gateway_usage_dead_letter_records_total counter
gateway_usage_dead_letter_records_total 1
# HELP gateway_snapshot_version Version of the snapshot the node serves (0: none yet).
# TYPE gateway_snapshot_version gauge
gateway_snapshot_version 9
# HELP gateway_snapshot_apply_errors_total Snapshots from the control plane or the disk that the node refused (malformed, bad signature or hash, too old, another country's).
# TYPE gateway_snapshot_apply_errors_total counter
gateway_snapshot_apply_errors_total 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "gateway_requests_total", "gateway_spend_micro_sek_total",
		"gateway_admission_refusals_total", "gateway_route_breaker_state", "gateway_route_breaker_transitions_total",
		"gateway_spool_records", "gateway_usage_dead_letter_records_total", "gateway_snapshot_version", "gateway_snapshot_apply_errors_total"); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(m.Registry(), "gateway_time_to_first_token_seconds", "gateway_usage_batch_send_duration_seconds", "gateway_snapshot_age_seconds"); err != nil || n != 3 {
		t.Fatalf("ttft, batch and age series: %d, %v", n, err)
	}
}

type stubSpool struct{ s meter.Stats }

func (s stubSpool) Stats() meter.Stats { return s.s }

type stubBreakers map[string]string

func (b stubBreakers) EachState(fn func(route, state string)) {
	for r, s := range b {
		fn(r, s)
	}
}

func BenchmarkObserve(b *testing.B) {
	m := New()
	r := chatRequest
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Observe(&r)
			m.Attempt("p1", "ok", time.Millisecond, false)
		}
	})
}
