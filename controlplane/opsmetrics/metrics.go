// Package opsmetrics is the control plane's Prometheus instrumentation: one private
// registry (never the global default) holding the usage ingest, snapshot, node, payment,
// signup, retention and Postgres pool figures, plus the Go runtime and process
// collectors, and the ops listener's handler (/metrics, /livez, /readyz).
//
// The packages it measures do not import Prometheus: each declares a small interface or
// callback in its Config (store.IngestMetrics, publish.Config.Metrics, ...) with a no-op
// default, and Metrics implements them. Every label set is bounded: reason codes, event
// types and outcomes from fixed lists (anything else is "other"), node IDs of the nodes
// seen recently; never request, account or key IDs.
package opsmetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sekgate/gateway/controlplane/store"
)

// Namespace prefixes every metric of the control plane.
const Namespace = "gateway_cp"

// DurationBuckets are the classic histogram buckets (seconds) of the control plane's
// database-bound operations: 1 ms to 10 s.
var DurationBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// rejectReasons are the ingest's rejection codes, each counted under its own label.
var rejectReasons = []string{store.RejectUndecodable, store.RejectInvalid, store.RejectTokens, store.RejectPrice,
	store.RejectPriceMismatch, store.RejectUnknownModel, store.RejectOverflow}

// Metrics holds the control plane's registry and instruments. Its methods are safe for
// concurrent use. Create it with New.
type Metrics struct {
	reg *prometheus.Registry

	batches        *prometheus.CounterVec
	recordsIn      prometheus.Counter
	duplicates     prometheus.Counter
	rejected       *prometheus.CounterVec
	ingestDuration prometheus.Histogram
	ingestWait     prometheus.Histogram

	compileDuration *prometheus.HistogramVec
	snapshotBytes   prometheus.Gauge
	snapshotVersion prometheus.Gauge

	webhookEvents *prometheus.CounterVec
	topups        *prometheus.CounterVec
	signups       *prometheus.CounterVec
	retention     *prometheus.CounterVec
	retentionDays prometheus.Counter
}

// New builds the registry with every instrument registered (label children that are
// known up front are created at zero, so a scrape shows them before the first event).
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	m.batches = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "usage_batches_total",
		Help: "Usage batches received from nodes, by result (applied, failed: not applied, the node resends it)."}, []string{"result"})
	m.recordsIn = prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "usage_records_ingested_total",
		Help: "Usage records applied (inserted and charged)."})
	m.duplicates = prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "usage_records_duplicate_total",
		Help: "Usage records ignored because their request ID was applied before."})
	m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "usage_records_rejected_total",
		Help: "Usage records refused and kept in rejected_records, by reason code."}, []string{"reason"})
	m.ingestDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "usage_ingest_duration_seconds",
		Help: "Time of a usage batch's ingest transaction, retries included.", Buckets: DurationBuckets})
	m.ingestWait = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "usage_ingest_wait_seconds",
		Help: "Time a usage batch waited in the control plane for an ingest slot (--ingest-concurrency) before its transaction.", Buckets: DurationBuckets})
	for _, r := range []string{"applied", "failed"} {
		m.batches.WithLabelValues(r)
	}
	for _, r := range append(rejectReasons, "other") {
		m.rejected.WithLabelValues(r)
	}
	f(m.batches)
	f(m.recordsIn)
	f(m.duplicates)
	f(m.rejected)
	f(m.ingestDuration)
	f(m.ingestWait)

	m.compileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "snapshot_compile_duration_seconds",
		Help: "Time to compile the snapshot from the database, by result (ok, error).", Buckets: DurationBuckets}, []string{"result"})
	m.snapshotBytes = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "snapshot_size_bytes",
		Help: "Size of the current signed snapshot's JSON encoding as sent to nodes."})
	m.snapshotVersion = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "snapshot_version",
		Help: "Version of the current snapshot this control plane serves."})
	for _, r := range []string{"ok", "error"} {
		m.compileDuration.WithLabelValues(r)
	}
	f(m.compileDuration)
	f(m.snapshotBytes)
	f(m.snapshotVersion)

	m.webhookEvents = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "payment_webhook_events_total",
		Help: "Payment webhook deliveries, by event type (handled types, else other) and outcome."}, []string{"type", "outcome"})
	m.topups = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "topup_sessions_total",
		Help: "Top-up checkout session requests, by result (created, failed)."}, []string{"result"})
	m.signups = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "signups_total",
		Help: "Signup form submissions, by outcome."}, []string{"outcome"})
	m.retention = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "retention_deleted_total",
		Help: "Rows the retention job deleted, by table (records, rejected_records)."}, []string{"table"})
	m.retentionDays = prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "retention_days_dropped_total",
		Help: "Day partitions of request records the retention job dropped, whole."})
	for _, r := range []string{"created", "failed"} {
		m.topups.WithLabelValues(r)
	}
	for _, o := range []string{"received", "rate_limited", "invalid", "honeypot", "error"} {
		m.signups.WithLabelValues(o)
	}
	for _, t := range []string{"records", "rejected_records"} {
		m.retention.WithLabelValues(t)
	}
	f(m.webhookEvents)
	f(m.topups)
	f(m.signups)
	f(m.retention)
	f(m.retentionDays)
	return m
}

// Registry is the private registry (for the handler and tests).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// BatchIngested implements store.IngestMetrics.
func (m *Metrics) BatchIngested(s store.IngestStats) {
	m.ingestWait.Observe(s.Wait.Seconds())
	if s.Err != nil {
		if s.Duration > 0 {
			m.ingestDuration.Observe(s.Duration.Seconds())
		}
		m.batches.WithLabelValues("failed").Inc()
		return
	}
	m.ingestDuration.Observe(s.Duration.Seconds())
	m.batches.WithLabelValues("applied").Inc()
	m.recordsIn.Add(float64(s.Inserted))
	m.duplicates.Add(float64(s.Duplicates))
	for code, n := range s.Rejected {
		m.rejected.WithLabelValues(oneOf(code, rejectReasons)).Add(float64(n))
	}
}

// SnapshotCompiled records one compile: its time and whether it succeeded.
func (m *Metrics) SnapshotCompiled(d time.Duration, err error) {
	r := "ok"
	if err != nil {
		r = "error"
	}
	m.compileDuration.WithLabelValues(r).Observe(d.Seconds())
}

// SnapshotPublished records the version and encoded size of a newly published snapshot.
func (m *Metrics) SnapshotPublished(version int64, size int) {
	m.snapshotVersion.Set(float64(version))
	m.snapshotBytes.Set(float64(size))
}

// WebhookEvent counts one payment webhook delivery.
func (m *Metrics) WebhookEvent(eventType, outcome string) {
	m.webhookEvents.WithLabelValues(eventType, outcome).Inc()
}

// TopupSession counts a checkout session request: created, or failed.
func (m *Metrics) TopupSession(created bool) {
	r := "failed"
	if created {
		r = "created"
	}
	m.topups.WithLabelValues(r).Inc()
}

// Signup counts one signup submission by outcome.
func (m *Metrics) Signup(outcome string) { m.signups.WithLabelValues(outcome).Inc() }

// RetentionDeleted counts rows the retention job deleted from table.
func (m *Metrics) RetentionDeleted(table string, n int) {
	m.retention.WithLabelValues(table).Add(float64(n))
}

// RetentionDayDropped counts one day partition of request records the retention job dropped.
func (m *Metrics) RetentionDayDropped() { m.retentionDays.Inc() }

// oneOf returns v when it is in known, else "other" (bounded label values).
func oneOf(v string, known []string) string {
	for _, k := range known {
		if v == k {
			return v
		}
	}
	return "other"
}
