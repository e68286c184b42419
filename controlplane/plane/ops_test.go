package plane

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/usage"
)

// The control plane with --ops-listen, end to end: usage batches through the internal
// API (one, the same again, one with two bad records), then /metrics parsed as Prometheus
// text counts exactly what was sent; /livez and /readyz answer; the node that polled is
// exported with its applied version and lag.
func TestOpsListenerMetrics(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.Ops.Listen = freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	defer func() {
		cancel()
		select {
		case <-ran:
		case <-time.After(20 * time.Second):
			t.Error("shutdown hung")
		}
	}()
	ops := "http://" + cfg.Ops.Listen
	waitFor(t, "/readyz to answer 200", func() bool {
		st, _ := plainGet(ops + "/readyz")
		return st == 200
	})
	if st, body := plainGet(ops + "/livez"); st != 200 || !strings.Contains(body, "ok") {
		t.Fatalf("/livez: %d %q", st, body)
	}
	// A node polls (acknowledging version 0) so the node gauges have a row.
	waitFor(t, "a snapshot", func() bool {
		st, _ := getAt(cfg.Listen, "/internal/v1/snapshot?have=0&region=se-sto", testNodeToken)
		return st == 200
	})

	rec := func(id string) json.RawMessage {
		b, _ := json.Marshal(usage.Record{RequestID: id, TS: time.Now().UTC(), AccountID: "acct_ops", Model: "m",
			Endpoint: "/v1/chat/completions", Provider: "p", Status: 200, Result: usage.ResultOK})
		return b
	}
	post := func(batchID string, recs ...json.RawMessage) usage.Reply {
		t.Helper()
		body, _ := json.Marshal(rawBatch{NodeID: "n1", BatchID: batchID, Records: recs})
		req, _ := http.NewRequest("POST", "http://"+cfg.Listen+internalapi.PathUsage, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testNodeToken)
		req.Header.Set(internalapi.HeaderNodeID, "n1")
		req.Header.Set(internalapi.HeaderSpoolAge, "1500")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var rep usage.Reply
		if b, _ := io.ReadAll(res.Body); res.StatusCode != 200 || json.Unmarshal(b, &rep) != nil {
			t.Fatalf("POST usage %s: %d %s", batchID, res.StatusCode, b)
		}
		return rep
	}
	first := []json.RawMessage{rec("req_ops_1"), rec("req_ops_2"), rec("req_ops_3")}
	if r := post("b1", first...); r.Inserted != 3 {
		t.Fatalf("first batch: %+v", r)
	}
	if r := post("b1", first...); r.Duplicates != 3 || r.Inserted != 0 {
		t.Fatalf("resent batch: %+v", r)
	}
	negative, _ := json.Marshal(usage.Record{RequestID: "req_ops_neg", TS: time.Now().UTC(), AccountID: "acct_ops", Model: "m",
		Status: 200, Result: usage.ResultOK, PromptTokens: -1})
	if r := post("b2", rec("req_ops_4"), negative, json.RawMessage(`{"request_id":"req_ops_bad","ts":"yesterday"}`)); r.Inserted != 1 || r.Rejected != 2 {
		t.Fatalf("batch with bad records: %+v", r)
	}

	fams := scrape(t, ops+"/metrics")
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"gateway_cp_usage_batches_total", map[string]string{"result": "applied"}, 3},
		{"gateway_cp_usage_batches_total", map[string]string{"result": "failed"}, 0},
		{"gateway_cp_usage_records_ingested_total", nil, 4},
		{"gateway_cp_usage_records_duplicate_total", nil, 3},
		{"gateway_cp_usage_records_rejected_total", map[string]string{"reason": "tokens_out_of_bounds"}, 1},
		{"gateway_cp_usage_records_rejected_total", map[string]string{"reason": "undecodable"}, 1},
		{"gateway_cp_usage_records_rejected_total", map[string]string{"reason": "price_mismatch"}, 0},
		{"gateway_cp_node_applied_snapshot_version", map[string]string{"node": "n1"}, 0},
		{"gateway_cp_node_spool_age_seconds", map[string]string{"node": "n1"}, 1.5},
		{"gateway_cp_node_info", map[string]string{"node": "n1", "region": "se-sto"}, 1},
		{"gateway_cp_db_pool_max_conns", nil, float64(cfg.MaxConns)},
	} {
		if got, ok := value(fams, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	h := fams["gateway_cp_usage_ingest_duration_seconds"]
	if h == nil || h.GetType() != dto.MetricType_HISTOGRAM || h.Metric[0].Histogram.GetSampleCount() != 3 ||
		len(h.Metric[0].Histogram.Bucket) == 0 {
		t.Errorf("ingest duration histogram: %v", h)
	}
	if w := fams["gateway_cp_usage_ingest_wait_seconds"]; w == nil || w.GetType() != dto.MetricType_HISTOGRAM ||
		w.Metric[0].Histogram.GetSampleCount() != 3 {
		t.Errorf("ingest wait histogram: %v", w)
	}
	version, _ := value(fams, "gateway_cp_snapshot_version", nil)
	size, _ := value(fams, "gateway_cp_snapshot_size_bytes", nil)
	lag, _ := value(fams, "gateway_cp_node_snapshot_lag", map[string]string{"node": "n1"})
	if version < 1 || size < 100 || lag != version {
		t.Errorf("snapshot version %v, size %v, lag of n1 %v (it acknowledged 0)", version, size, lag)
	}
	if c := fams["gateway_cp_snapshot_compile_duration_seconds"]; c == nil || c.GetType() != dto.MetricType_HISTOGRAM ||
		c.Metric[0].Histogram.GetSampleCount()+c.Metric[1].Histogram.GetSampleCount() < 1 {
		t.Errorf("compile histogram: %v", c)
	}
	for _, name := range []string{"gateway_cp_signups_total", "gateway_cp_topup_sessions_total", "gateway_cp_retention_deleted_total", "gateway_cp_retention_days_dropped_total",
		"gateway_cp_db_pool_acquires_total", "gateway_cp_db_pool_acquire_wait_seconds_total", "go_goroutines"} {
		if fams[name] == nil {
			t.Errorf("%s missing from the scrape", name)
		}
	}
}

// rawBatch is a usage batch whose records are sent as given (bad ones included).
type rawBatch struct {
	NodeID  string            `json:"node_id"`
	BatchID string            `json:"batch_id"`
	Records []json.RawMessage `json:"records"`
}

func plainGet(url string) (int, string) {
	res, err := http.Get(url)
	if err != nil {
		return 0, ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	poll.Until(t, 30*time.Second, what, ok)
}

// scrape GETs a Prometheus text exposition and parses it.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("scrape: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("parse exposition: %v", err)
	}
	return fams
}

// value is the counter or gauge of family name whose labels include want.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		for k, v := range want {
			found := false
			for _, l := range m.Label {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}
