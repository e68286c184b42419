package api_test

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/usage"
)

// GET /admin/v1/series answers what the nodes' batches added, each record once, per
// dimension, with percentiles within the stated bound; bad parameters get the envelope.
func TestAdminSeries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200)
	acct := e.createAccount("Acme AB", "se")
	now := time.Now().UTC()
	var recs []usage.Record
	for i := range 10 {
		r := chatRecord(fmt.Sprintf("req_series_%02d", i), acct, 100, 10)
		r.TS = now.Add(-time.Duration(i) * 3 * time.Minute)
		r.DurationMS, r.TTFTMS = int64(100*(i+1)), int64(10*(i+1))
		r.Routing = &usage.Routing{Attempts: []usage.Attempt{{Route: "se-vllm", Status: 200}}}
		if i%5 == 0 {
			r.Result, r.Status = usage.ResultUpstreamError, 502
		}
		recs = append(recs, r)
	}
	for range 2 { // sent twice: counted once
		if _, status := e.postUsage(usage.Batch{NodeID: "node-1", BatchID: "b1", Records: recs}); status != 200 {
			t.Fatalf("usage: %d", status)
		}
	}
	get := func(q url.Values) adminapi.Series {
		t.Helper()
		var s adminapi.Series
		e.mustStatus(e.admin("GET", "/admin/v1/series?"+q.Encode(), nil), 200).json(t, &s)
		return s
	}
	from := now.Add(-time.Hour).Format(time.RFC3339)
	to := now.Add(time.Minute).Format(time.RFC3339)
	for _, q := range []url.Values{
		{},
		{"dimension": {"all"}, "from": {from}, "to": {to}, "step": {"1m"}},
		{"dimension": {"model"}, "key": {"llama-3.1-8b"}, "from": {from}, "to": {to}, "step": {"5m"}},
		{"dimension": {"route"}, "key": {"se-vllm"}, "from": {from}, "to": {to}},
		{"dimension": {"node"}, "key": {"node-1"}, "from": {from}, "to": {to}, "step": {"1h"}},
		{"dimension": {"account"}, "key": {acct}, "from": {from}, "to": {to}, "step": {"15m"}},
	} {
		s := get(q)
		var sum int64
		for _, p := range s.Points {
			sum += p.Requests
		}
		tot := s.Total
		if tot.Requests != 10 || sum != 10 || tot.Errors != 2 || *tot.ErrorRate != 0.2 || tot.ByClass["upstream"] != 2 ||
			tot.PromptTokens != 1000 || tot.CompletionTokens != 100 || tot.PriceMicroSEK != 10*recs[0].PriceMicroSEK ||
			tot.DurationMS.Count != 10 || tot.TTFTMS.Count != 10 {
			t.Fatalf("%v: total %+v, %d in the points", q, tot, sum)
		}
		// Durations 100..1000 ms: p50 is the 5th (500), p90 the 9th (900), p99 the 10th.
		for _, c := range []struct {
			got  *float64
			want float64
		}{{tot.DurationMS.P50, 500}, {tot.DurationMS.P90, 900}, {tot.DurationMS.P99, 1000}, {tot.TTFTMS.P50, 50}} {
			if c.got == nil || *c.got < c.want*(1-s.PercentileError) || *c.got > c.want*(1+s.PercentileError) {
				t.Errorf("%v: percentile %v, want %v within %v", q, c.got, c.want, s.PercentileError)
			}
		}
	}
	if s := get(url.Values{"dimension": {"model"}, "key": {"no-such-model"}}); s.Total.Requests != 0 || s.Total.ErrorRate != nil ||
		s.Total.DurationMS.P50 != nil || len(s.Points) < 60 || len(s.Points) > 61 || s.StepSeconds != 60 {
		t.Fatalf("an unknown model: total %+v, %d points of %d s", s.Total, len(s.Points), s.StepSeconds)
	}
	if s := get(url.Values{"from": {now.Add(-24 * time.Hour).Format(time.RFC3339)}}); s.StepSeconds != 300 || len(s.Points) < 288 {
		t.Fatalf("a day: step %d, %d points", s.StepSeconds, len(s.Points))
	}

	for _, c := range []struct {
		query, param string
	}{
		{"dimension=region", "dimension"},
		{"dimension=model", "key"},
		{"dimension=all&key=x", "key"},
		{"from=yesterday", "from"},
		{"to=2026-13-01T00:00:00Z", "to"},
		{"from=2026-11-28T10:00:00Z&to=2026-11-28T09:00:00Z", "from"},
		{"step=30s", "step"},
		{"step=90s", "step"},
		{"step=fast", "step"},
		{"from=2026-01-01T00:00:00Z&to=2026-11-01T00:00:00Z&step=1m", "step"},
	} {
		r := e.mustStatus(e.admin("GET", "/admin/v1/series?"+c.query, nil), 400)
		if typ, _, param := r.errInfo(t); typ != "invalid_request_error" || param != c.param {
			t.Errorf("%s: %s param %q, want %q", c.query, typ, param, c.param)
		}
	}
	e.mustStatus(e.do("GET", "/admin/v1/series", "", nil, nil), 401)
}
