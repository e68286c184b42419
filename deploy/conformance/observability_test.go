package conformance

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// scrape reads a Prometheus text exposition.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}

// sum adds the values of the family's series whose labels include match.
func sum(fams map[string]*dto.MetricFamily, name string, match map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	total := 0.0
next:
	for _, m := range f.GetMetric() {
		for k, v := range match {
			found := false
			for _, l := range m.GetLabel() {
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
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Untyped != nil:
			total += m.GetUntyped().GetValue()
		}
	}
	return total
}

// TestOperations_MetricsAddUpAndDashboardQueriesExist runs a small mixed load through the real binaries and
// scrapes both planes: requests counted equal records written, tokens and micro-SEK equal
// the records' sums, refusals are counted by reason; then every query of the Grafana
// dashboard parses and names only metrics and labels these scrapes hold.
func TestOperations_MetricsAddUpAndDashboardQueriesExist(t *testing.T) {
	cpOps, _ := freeAddr()
	o := newOpsStack(t, "--ops-listen", cpOps)
	o.stop(t, o.dp, false)
	// A node with its ops listener, and a catalogue whose failover model's first route is
	// dead (failovers, a breaker that opens).
	dpOps, _ := freeAddr()
	addr, _ := freeAddr()
	if err := o.spawn("dataplane", "observed", []string{"GATEWAY_NODE_TOKEN=" + o.NodeToken},
		"--listen", addr, "--control-plane-url", o.CPURL, "--snapshot-public-key-file", o.PublicKey,
		"--node-id", "observed", "--data-dir", filepath.Join(o.dir, "observed"), "--snapshot-wait", "10s",
		"--usage-batch-interval", "50ms", "--region", "se-obs", "--ops-listen", dpOps); err != nil {
		t.Fatal(err)
	}
	o.DataURL = "http://" + addr
	o.wait(t, o.DataURL+"/healthz")
	dead, _ := freeAddr()
	if r, err := o.admin("PUT", "/admin/v1/catalog", demoCatalog(o.SimURL+"/v1", o.SimURL+"/v1", "http://"+dead+"/v1")); err != nil || r.Status != 200 {
		t.Fatalf("load catalogue: %v %d %s", err, r.Status, r.Body)
	}
	a := o.NewAccount(t, "se", 100, modelChat, modelFailover)
	broke := o.NewAccount(t, "se", 0, modelChat)
	dpURL, cpURL := "http://"+dpOps+"/metrics", "http://"+cpOps+"/metrics"
	before := scrape(t, dpURL)

	// The load: plain and streamed chat, failovers, and refusals of each kind measured.
	for i := range 6 {
		if r := o.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat, "max_tokens", 5+i)); r.Status != 200 {
			t.Fatalf("chat: %d %s", r.Status, r.Body)
		}
	}
	for range 3 {
		if r := o.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat, "stream", true, "max_tokens", 4)); r.Status != 200 || !strings.Contains(string(r.Body), "[DONE]") {
			t.Fatalf("stream: %d %s", r.Status, r.Body)
		}
	}
	for range 7 { // the dead route's breaker opens after 5 failures
		if r := o.Post(t, "/v1/chat/completions", a.Key, chatReq(modelFailover)); r.Status != 200 {
			t.Fatalf("failover: %d %s", r.Status, r.Body)
		}
	}
	o.Post(t, "/v1/chat/completions", "sk-not-a-key-0123456789", chatReq(modelChat))
	o.Post(t, "/v1/chat/completions", "", chatReq(modelChat))
	if r := o.Post(t, "/v1/chat/completions", broke.Key, chatReq(modelChat)); r.Status != 402 {
		t.Fatalf("no balance: %d", r.Status)
	}
	if r := o.rawPost(t, "/v1/chat/completions", a.Key, 9<<20); r.Status != 413 {
		t.Fatalf("oversized: %d", r.Status)
	}

	// Every record reaches the control plane.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, o.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n, prompt, completion, price int64
	o.waitFor(t, "the records at the control plane", func() bool {
		err := conn.QueryRow(ctx, `SELECT count(*), COALESCE(sum(prompt_tokens), 0)::bigint, COALESCE(sum(completion_tokens), 0)::bigint,
			COALESCE(sum(price_micro_sek), 0)::bigint FROM request_records`).Scan(&n, &prompt, &completion, &price)
		return err == nil && n == 16
	})
	var dp, cp map[string]*dto.MetricFamily
	o.waitFor(t, "the node's spool to drain", func() bool {
		dp, cp = scrape(t, dpURL), scrape(t, cpURL)
		return sum(dp, "gateway_spool_records", nil) == 0 && sum(cp, "gateway_cp_usage_records_ingested_total", nil) == float64(n)
	})
	delta := func(name string, match map[string]string) float64 {
		return sum(dp, name, match) - sum(before, name, match)
	}
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"requests counted vs records written", delta("gateway_requests_total", nil), float64(n)},
		{"records handed to the meter", delta("gateway_usage_records_total", nil), float64(n)},
		{"records ingested by the control plane", sum(cp, "gateway_cp_usage_records_ingested_total", nil), float64(n)},
		{"prompt tokens", delta("gateway_tokens_total", map[string]string{"kind": "prompt"}), float64(prompt)},
		{"completion tokens", delta("gateway_tokens_total", map[string]string{"kind": "completion"}), float64(completion)},
		{"micro-SEK", delta("gateway_spend_micro_sek_total", nil), float64(price)},
		{"streams", delta("gateway_requests_total", map[string]string{"model": modelChat, "result": "ok"}), 9},
		{"failovers", delta("gateway_failover_attempts_total", nil), 5},
		{"auth refusals", delta("gateway_admission_refusals_total", map[string]string{"reason": "auth"}), 2},
		{"balance refusals", delta("gateway_admission_refusals_total", map[string]string{"reason": "balance"}), 1},
		{"size refusals", delta("gateway_admission_refusals_total", map[string]string{"reason": "size"}), 1},
		{"rate refusals", delta("gateway_admission_refusals_total", map[string]string{"reason": "rate"}), 0},
		{"breaker opened", sum(dp, "gateway_route_breaker_transitions_total", map[string]string{"route": "fo-dead", "to": "open"}), 1},
		{"breaker open", sum(dp, "gateway_route_breaker_state", map[string]string{"route": "fo-dead"}), 2},
		{"open streams", sum(dp, "gateway_streams_open", nil), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	if price == 0 || prompt == 0 || completion == 0 {
		t.Fatalf("the load charged nothing: %d records, %d+%d tokens, %d micro-SEK", n, prompt, completion, price)
	}
	if f := dp["gateway_time_to_first_token_seconds"]; f == nil || f.GetType() != dto.MetricType_HISTOGRAM || sum(dp, "gateway_snapshot_version", nil) == 0 {
		t.Error("no first-token histogram or snapshot version")
	}
	t.Logf("%d records, %d prompt and %d completion tokens, %d micro-SEK: the node's and the control plane's figures agree", n, prompt, completion, price)
	checkDashboard(t, "../grafana/gateway.json", dp, cp)
}

// checkDashboard parses every PromQL expression of the Grafana dashboard and checks that it
// names only metric families and labels present in the scrapes (instance and job are the
// labels Prometheus adds per target; le is a histogram bucket's).
func checkDashboard(t *testing.T, path string, scrapes ...map[string]*dto.MetricFamily) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	labels := map[string]map[string]bool{} // family (and its _bucket/_sum/_count) -> label names
	for _, fams := range scrapes {
		for name, f := range fams {
			set := map[string]bool{"instance": true, "job": true}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					set[l.GetName()] = true
				}
			}
			labels[name] = set
			if f.GetType() == dto.MetricType_HISTOGRAM {
				bucket := map[string]bool{"le": true}
				for k := range set {
					bucket[k] = true
				}
				labels[name+"_bucket"], labels[name+"_sum"], labels[name+"_count"] = bucket, set, set
			}
		}
	}
	exprs := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs++
			// Grafana's interval variable is not PromQL; stand in a duration.
			q := strings.ReplaceAll(tg.Expr, "$__rate_interval", "5m")
			e, err := parser.ParseExpr(q)
			if err != nil {
				t.Errorf("panel %q: %q does not parse: %v", p.Title, tg.Expr, err)
				continue
			}
			used := map[string]bool{}
			parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
				vs, ok := n.(*parser.VectorSelector)
				if !ok {
					return nil
				}
				set := labels[vs.Name]
				if set == nil {
					t.Errorf("panel %q: metric %s is in no scrape", p.Title, vs.Name)
					return nil
				}
				for k := range set {
					used[k] = true
				}
				for _, m := range vs.LabelMatchers {
					if m.Name != "__name__" && !set[m.Name] {
						t.Errorf("panel %q: %s has no label %s", p.Title, vs.Name, m.Name)
					}
				}
				return nil
			})
			parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
				if ag, ok := n.(*parser.AggregateExpr); ok {
					for _, g := range ag.Grouping {
						if !used[g] {
							t.Errorf("panel %q: %q groups by %s, which its metrics do not have", p.Title, tg.Expr, g)
						}
					}
				}
				return nil
			})
		}
	}
	if exprs < 20 {
		t.Errorf("the dashboard has %d queries", exprs)
	}
	t.Logf("%d dashboard queries parse and name existing metrics and labels", exprs)
}
