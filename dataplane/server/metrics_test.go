package server

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sekgate/gateway/dataplane/telemetry"
)

// metricValue returns the value of the counter or gauge name with exactly labels (or the
// sample count of a histogram), and whether the series exists.
func metricValue(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
					continue next
				}
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				return m.GetCounter().GetValue(), true
			case dto.MetricType_GAUGE:
				return m.GetGauge().GetValue(), true
			case dto.MetricType_HISTOGRAM:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// Routed requests are counted by endpoint, model, provider, status class and result, with
// their tokens, price sides and timings; refusals before routing by reason.
func TestRequestMetrics(t *testing.T) {
	tel := telemetry.New()
	g := startGateway(t, func(c *Config) { c.Telemetry = tel })
	var priceSum float64
	for range 2 {
		r := g.do(t, "POST", "/v1/chat/completions", g.Keys.SE, chatBody)
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	for _, rec := range g.Meter.Records() {
		priceSum += float64(rec.PriceMicroSEK)
	}
	// Refusals before routing are not routed requests.
	g.do(t, "POST", "/v1/chat/completions", "", chatBody)
	g.do(t, "POST", "/v1/chat/completions", "sk-nope-"+g.Keys.SE[8:], chatBody)
	ep := "/v1/chat/completions"
	recs := g.Meter.Records()
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	model, provider := recs[0].Model, recs[0].Provider
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"gateway_requests_total", map[string]string{"endpoint": ep, "model": model, "provider": provider, "status_class": "2xx", "result": "ok"}, 2},
		{"gateway_tokens_total", map[string]string{"model": model, "kind": "prompt"}, 24},
		{"gateway_tokens_total", map[string]string{"model": model, "kind": "completion"}, 6},
		{"gateway_request_duration_seconds", map[string]string{"endpoint": ep, "model": model}, 2},
		{"gateway_added_duration_seconds", map[string]string{"endpoint": ep}, 2},
		{"gateway_upstream_attempts_total", map[string]string{"provider": provider, "outcome": "ok"}, 2},
		{"gateway_upstream_duration_seconds", map[string]string{"provider": provider}, 2},
		{"gateway_admission_refusals_total", map[string]string{"reason": "auth"}, 2},
		{"gateway_admission_refusals_total", map[string]string{"reason": "balance"}, 0},
	} {
		if got, ok := metricValue(t, tel.Registry(), c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	in, _ := metricValue(t, tel.Registry(), "gateway_spend_micro_sek_total", map[string]string{"model": model, "kind": "prompt"})
	out, _ := metricValue(t, tel.Registry(), "gateway_spend_micro_sek_total", map[string]string{"model": model, "kind": "completion"})
	if in+out != priceSum || priceSum == 0 {
		t.Errorf("spend %v + %v, records' prices %v", in, out, priceSum)
	}
}
