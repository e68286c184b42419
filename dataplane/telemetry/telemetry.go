// Package telemetry is the data plane's Prometheus instrumentation: one private registry
// (never the global default) holding the request, admission, upstream, breaker, snapshot
// and usage-spool figures, plus the Go runtime and process collectors. dataplane/opsapi
// serves it on the node's private ops listener.
//
// The request path reaches it through a few methods whose label children are cached: the
// first request of a label combination creates its series, every later one finds them in a
// copy-on-write map without locking or allocating. Every label value comes from a fixed
// list or the snapshot's catalogue (endpoint paths, canonical model IDs, provider and
// route names), never a request, account or key ID. A nil *Metrics is valid and records
// nothing.
package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sekgate/gateway/dataplane/index"
)

// Namespace prefixes every metric of the data plane.
const Namespace = "gateway"

// LatencyBuckets are the classic histogram buckets (seconds) of request, first-token and
// upstream times: 5 ms to 5 min (generations are long).
var LatencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// AddedBuckets are the buckets (seconds) of the gateway's own added time: 50 µs to 1 s.
var AddedBuckets = []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1}

// BatchBuckets are the buckets (seconds) of a usage batch's delivery, retries included.
var BatchBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Refusal is a reason a request is refused at admission, before any upstream is tried.
type Refusal uint8

// Admission refusal reasons (label values of gateway_admission_refusals_total).
const (
	RefuseAuth        Refusal = iota // missing, unknown, revoked or expired key; suspended account
	RefuseBalance                    // no positive balance
	RefuseResidency                  // the node's country does not admit the account's policy
	RefuseRate                       // key or account request rate
	RefuseConcurrency                // key or account concurrent requests
	RefuseSize                       // body over its endpoint's limit
	RefuseBudget                     // the account's or key's spend budget used up
	numRefusals
)

var refusalNames = [numRefusals]string{"auth", "balance", "residency", "rate", "concurrency", "size", "budget"}

func (r Refusal) String() string { return refusalNames[r] }

// Metrics holds the data plane's registry and instruments. Its methods are safe for
// concurrent use and allocation-free once a label combination has been seen.
type Metrics struct {
	reg *prometheus.Registry

	requests *prometheus.CounterVec   // endpoint, model, provider, status_class, result
	duration *prometheus.HistogramVec // endpoint, model
	ttft     *prometheus.HistogramVec // endpoint, model, provider
	added    *prometheus.HistogramVec // endpoint
	tokens   *prometheus.CounterVec   // model, kind
	spend    *prometheus.CounterVec   // model, kind
	upstream *prometheus.HistogramVec // provider
	attempts *prometheus.CounterVec   // provider, outcome
	failover *prometheus.CounterVec   // provider
	streams  prometheus.Gauge
	refused  [numRefusals]prometheus.Counter
	conns    *prometheus.CounterVec // reason
	breakers *prometheus.CounterVec // route, to
	// underreported counts records whose provider reported less output than it delivered
	// (model, provider).
	underreported *prometheus.CounterVec
	warmups       *prometheus.CounterVec // provider, outcome

	byRequest cache[requestKey, *requestSeries]
	byAttempt cache[attemptKey, *attemptSeries]
}

// New builds the registry with every instrument registered; series known up front
// (refusal reasons, endpoints) start at zero.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := m.reg.MustRegister
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "requests_total",
		Help: "Routed inference requests (one per usage record), by endpoint, model, provider that answered last (none: no attempt), status class and record result."},
		[]string{"endpoint", "model", "provider", "status_class", "result"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "request_duration_seconds",
		Help: "Routed inference requests' time from arrival to the record (streams: to their last event).", Buckets: LatencyBuckets},
		[]string{"endpoint", "model"})
	m.ttft = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "time_to_first_token_seconds",
		Help: "Streams' time from arrival until their first upstream event was ready to relay.", Buckets: LatencyBuckets},
		[]string{"endpoint", "model", "provider"})
	m.added = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "added_duration_seconds",
		Help: "The gateway's own time per answered request: its duration (streams: to the first event) less the time spent waiting on upstream attempts.", Buckets: AddedBuckets},
		[]string{"endpoint"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "tokens_total",
		Help: "Tokens charged in usage records, by model and kind (prompt, completion)."}, []string{"model", "kind"})
	m.spend = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "spend_micro_sek_total",
		Help: "Micro-SEK charged in usage records, by model and kind (prompt, completion); the kinds add up to the records' prices."}, []string{"model", "kind"})
	m.upstream = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "upstream_duration_seconds",
		Help: "Upstream attempts' time until the answer (streams: until the first event) or the failure.", Buckets: LatencyBuckets},
		[]string{"provider"})
	m.attempts = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "upstream_attempts_total",
		Help: "Upstream attempts by provider and outcome (ok, status_4xx, status_429, status_5xx, or the failure class)."}, []string{"provider", "outcome"})
	m.failover = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "failover_attempts_total",
		Help: "Upstream attempts after a request's first (another route tried after a failure), by the provider tried."}, []string{"provider"})
	m.streams = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "streams_open",
		Help: "Streams being relayed to clients."})
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "admission_refusals_total",
		Help: "Inference requests refused before any upstream was tried, by reason."}, []string{"reason"})
	for r := range numRefusals {
		m.refused[r] = refused.WithLabelValues(r.String())
	}
	m.conns = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "connections_refused_total",
		Help: "Client connections refused over the connection caps (total: --max-conns, per_addr: --max-conns-per-addr)."}, []string{"reason"})
	m.conns.WithLabelValues("total")
	m.conns.WithLabelValues("per_addr")
	m.breakers = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "route_breaker_transitions_total",
		Help: "Circuit-breaker state changes per route, by the state entered (closed, half-open, open)."}, []string{"route", "to"})
	m.underreported = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "output_underreported_total",
		Help: "Requests whose provider reported less output than the client was delivered (by the node's low estimate from the text), beyond the tolerance; charged the delivered estimate, and flagged routing.output_underreported in the record."},
		[]string{"model", "provider"})
	m.warmups = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "prefix_warmups_total",
		Help: "Copies of a tenant's request, cut to one output token, sent to the other of its prefix's two home replicas to fill that cache (not charged or recorded), by provider and outcome (ok, failed)."},
		[]string{"provider", "outcome"})
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.ttft, m.added, m.tokens, m.spend, m.upstream,
		m.attempts, m.failover, m.streams, refused, m.conns, m.breakers, m.underreported, m.warmups} {
		f(c)
	}
	for e := range index.Endpoint(numEndpoints) {
		m.added.WithLabelValues(e.Path())
	}
	m.byRequest.build = m.newRequestSeries
	m.byAttempt.build = m.newAttemptSeries
	return m
}

// numEndpoints is the number of inference endpoints (index.Endpoint values).
const numEndpoints = int(index.EPSystemOne) + 1

// Registry is the registry the ops listener serves; collectors of other parts of the node
// (snapshot, spool, breakers) are registered in it.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Refused counts an admission refusal.
func (m *Metrics) Refused(r Refusal) {
	if m != nil && r < numRefusals {
		m.refused[r].Inc()
	}
}

// ConnRefused counts a connection refused over a cap ("total" or "per_addr"), the
// listener's OnRefuse.
func (m *Metrics) ConnRefused(reason string) {
	if m != nil {
		m.conns.WithLabelValues(reason).Inc()
	}
}

// StreamOpened and StreamClosed count streams being relayed.
func (m *Metrics) StreamOpened() {
	if m != nil {
		m.streams.Inc()
	}
}

// StreamClosed: see StreamOpened.
func (m *Metrics) StreamClosed() {
	if m != nil {
		m.streams.Dec()
	}
}

// BreakerChanged counts a route's breaker entering state to; routing.HealthConfig's
// OnStateChange.
func (m *Metrics) BreakerChanged(route, _, to string) {
	if m != nil {
		m.breakers.WithLabelValues(route, to).Inc()
	}
}

var statusClasses = [...]string{"other", "1xx", "2xx", "3xx", "4xx", "5xx"}

func classIndex(status int) uint8 {
	if status < 100 || status > 599 {
		return 0
	}
	return uint8(status / 100)
}

// Request is what the request path reports of one finished, routed request: the figures
// of its usage record plus its timings.
type Request struct {
	Endpoint index.Endpoint
	// Model is the canonical model ID, Provider the provider of the route tried last (empty:
	// none was tried), Result the record's result.
	Model, Provider, Result string
	Status                  int
	// Tokens and micro-SEK charged, each side priced on its own (they add up to the
	// record's price).
	PromptTokens, CompletionTokens int64
	PromptMicroSEK, OutputMicroSEK int64
	// Duration is the whole request's time; Upstream the time spent waiting on upstream
	// attempts before the answer was committed; TTFT, for streams, the time until the first
	// event was ready (0: not a stream, or none arrived).
	Duration, Upstream, TTFT time.Duration
	Stream                   bool
	// Underreported: the provider reported less output than was delivered (the record's
	// routing.output_underreported).
	Underreported bool
}

type requestKey struct {
	ep, class       uint8
	stream          bool
	model, provider string
	result          string
}

type requestSeries struct {
	requests              prometheus.Counter
	duration, ttft, added prometheus.Observer
	tokensIn, tokensOut   prometheus.Counter
	spendIn, spendOut     prometheus.Counter
}

func (m *Metrics) newRequestSeries(k requestKey) *requestSeries {
	ep := index.Endpoint(k.ep).Path()
	provider := k.provider
	if provider == "" {
		provider = "none"
	}
	var ttft prometheus.Observer
	if k.stream { // non-streaming combinations get no empty first-token histogram
		ttft = m.ttft.WithLabelValues(ep, k.model, provider)
	}
	return &requestSeries{
		requests:  m.requests.WithLabelValues(ep, k.model, provider, statusClasses[k.class], k.result),
		duration:  m.duration.WithLabelValues(ep, k.model),
		ttft:      ttft,
		added:     m.added.WithLabelValues(ep),
		tokensIn:  m.tokens.WithLabelValues(k.model, "prompt"),
		tokensOut: m.tokens.WithLabelValues(k.model, "completion"),
		spendIn:   m.spend.WithLabelValues(k.model, "prompt"),
		spendOut:  m.spend.WithLabelValues(k.model, "completion"),
	}
}

// Observe counts one finished, routed request.
func (m *Metrics) Observe(r *Request) {
	if m == nil || int(r.Endpoint) >= numEndpoints {
		return
	}
	s := m.byRequest.get(requestKey{ep: uint8(r.Endpoint), class: classIndex(r.Status), stream: r.Stream, model: r.Model, provider: r.Provider, result: r.Result})
	s.requests.Inc()
	s.duration.Observe(r.Duration.Seconds())
	if r.Underreported {
		m.underreported.WithLabelValues(r.Model, r.Provider).Inc()
	}
	if r.PromptTokens > 0 {
		s.tokensIn.Add(float64(r.PromptTokens))
	}
	if r.CompletionTokens > 0 {
		s.tokensOut.Add(float64(r.CompletionTokens))
	}
	if r.PromptMicroSEK > 0 {
		s.spendIn.Add(float64(r.PromptMicroSEK))
	}
	if r.OutputMicroSEK > 0 {
		s.spendOut.Add(float64(r.OutputMicroSEK))
	}
	if r.Stream && r.TTFT > 0 {
		s.ttft.Observe(r.TTFT.Seconds())
		s.added.Observe(max(r.TTFT-r.Upstream, 0).Seconds())
	} else if !r.Stream && r.Provider != "" && r.Status == 200 {
		s.added.Observe(max(r.Duration-r.Upstream, 0).Seconds())
	}
}

type attemptKey struct{ provider, outcome string }

type attemptSeries struct {
	attempts, failover prometheus.Counter
	upstream           prometheus.Observer
}

func (m *Metrics) newAttemptSeries(k attemptKey) *attemptSeries {
	return &attemptSeries{
		attempts: m.attempts.WithLabelValues(k.provider, k.outcome),
		failover: m.failover.WithLabelValues(k.provider),
		upstream: m.upstream.WithLabelValues(k.provider),
	}
}

// Warmup counts a prefix warm-up copy sent to provider (routing.Warm), answered or not.
func (m *Metrics) Warmup(provider string, ok bool) {
	if m == nil {
		return
	}
	outcome := "failed"
	if ok {
		outcome = "ok"
	}
	m.warmups.WithLabelValues(provider, outcome).Inc()
}

// Attempt counts one upstream attempt at provider with its outcome (a fixed list: ok,
// status_4xx, status_429, status_5xx or a failure class), how long it took and whether it
// was a failover (not the request's first attempt).
func (m *Metrics) Attempt(provider, outcome string, d time.Duration, failover bool) {
	if m == nil {
		return
	}
	s := m.byAttempt.get(attemptKey{provider, outcome})
	s.attempts.Inc()
	s.upstream.Observe(d.Seconds())
	if failover {
		s.failover.Inc()
	}
}
