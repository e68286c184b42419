package server

import (
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/usage"
)

// results are the record results counted, in a fixed order for table lookups.
var results = [...]string{usage.ResultOK, usage.ResultIncomplete, usage.ResultCancelled, usage.ResultUpstreamError,
	usage.ResultTimeout, usage.ResultRateLimited, usage.ResultNoRoute, usage.ResultRejected}

const numEP = int(index.EPSystemOne) + 1

// requestMetrics counts routed requests per endpoint and result, their tokens and their
// durations. Every series is created up front, so counting costs no allocation.
type requestMetrics struct {
	requests [numEP][len(results)]*metrics.Counter
	tokens   [numEP][2]*metrics.Counter // prompt, completion
	duration [numEP]*metrics.Histogram
	// refusedTotal and refusedPerAddr count connections refused over the connection caps.
	refusedTotal, refusedPerAddr *metrics.Counter
}

func newRequestMetrics(set *metrics.Set) *requestMetrics {
	m := &requestMetrics{}
	for e := range numEP {
		ep := `endpoint="` + index.Endpoint(e).Path() + `"`
		for i, r := range results {
			m.requests[e][i] = set.NewCounter(`gateway_requests_total{` + ep + `,result="` + r + `"}`)
		}
		m.tokens[e][0] = set.NewCounter(`gateway_tokens_total{` + ep + `,kind="prompt"}`)
		m.tokens[e][1] = set.NewCounter(`gateway_tokens_total{` + ep + `,kind="completion"}`)
		m.duration[e] = set.NewHistogram(`gateway_request_duration_seconds{` + ep + `}`)
	}
	m.refusedTotal = set.NewCounter(`gateway_connections_refused_total{reason="total"}`)
	m.refusedPerAddr = set.NewCounter(`gateway_connections_refused_total{reason="per_addr"}`)
	return m
}

// refused counts a connection refused over a cap ("total" or "per_addr").
func (m *requestMetrics) refused(reason string) {
	if reason == "total" {
		m.refusedTotal.Inc()
		return
	}
	m.refusedPerAddr.Inc()
}

// observe counts one finished request of the record.
func (m *requestMetrics) observe(rec *usage.Record, d time.Duration) {
	e, ok := index.EndpointOf(rec.Endpoint)
	if !ok {
		return
	}
	for i, r := range results {
		if r == rec.Result {
			m.requests[e][i].Inc()
			break
		}
	}
	if rec.PromptTokens > 0 {
		m.tokens[e][0].Add(int(rec.PromptTokens))
	}
	if rec.CompletionTokens > 0 {
		m.tokens[e][1].Add(int(rec.CompletionTokens))
	}
	m.duration[e].Update(d.Seconds())
}
