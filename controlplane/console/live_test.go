package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/usage"
)

const liveCatalog = `{"models":[{"id":"llama-3.1-8b","aliases":[],"endpoint":"/v1/chat/completions",
  "input_ore_per_million_tokens":150,"output_ore_per_million_tokens":300,
  "routes":[{"id":"llama-se","provider":"vllm","base_url":"http://127.0.0.1:8090/v1","protocols":["/v1/chat/completions"],
    "region":"se-sto-1","country":"SE","priority":0,"weight":1}]}]}`

var seriesAttr = regexp.MustCompile(`id="live-charts" data-series="([^"]*)" data-source="([^"]*)"`)

// The overview, account, model, route and node pages carry the live view: its figures,
// the charts' container with the series the nodes' records make, and the chart library
// and script, served by the console itself.
func TestConsoleLiveView(t *testing.T) {
	t.Parallel()
	srv, st := newConsole(t)
	ctx := context.Background()
	req, _ := http.NewRequest("PUT", srv.URL+"/admin/v1/catalog", strings.NewReader(liveCatalog))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 200 {
		t.Fatalf("catalogue: %v %v", res, err)
	}
	a, err := st.CreateAccount(ctx, "Live AB", "se")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	var recs []usage.Record
	for i := range 4 {
		r := usage.Record{RequestID: fmt.Sprintf("req_live_%d", i), TS: now.Add(-time.Duration(i) * time.Minute), AccountID: a.ID,
			Model: "llama-3.1-8b", Endpoint: "/v1/chat/completions", Stream: true, Status: 200, Result: usage.ResultOK,
			PromptTokens: 100, CompletionTokens: 20, PriceMicroSEK: money.Price(100, 20, 150, 300), DurationMS: 800, TTFTMS: 120,
			Routing: &usage.Routing{Attempts: []usage.Attempt{{Route: "llama-se", Status: 200}}}}
		if i == 3 {
			r.Result, r.Status = usage.ResultTimeout, 504
		}
		recs = append(recs, r)
	}
	if _, err := st.IngestBatch(ctx, usage.Batch{NodeID: "se-sto-a", BatchID: "b1", Records: recs}); err != nil {
		t.Fatal(err)
	}
	c := browser(t)
	login(t, srv, c)
	for _, tc := range []struct {
		path, source string
		want         []string
	}{
		{"/console/overview", "dimension=all", nil},
		{"/console/accounts/" + a.ID, "dimension=account", []string{"Live AB"}},
		{"/console/models/llama-3.1-8b?range=24h", "dimension=model", []string{"llama-se", "150 öre"}},
		{"/console/routes/llama-se?range=6h", "dimension=route", []string{"vllm", "se-sto-1"}},
		{"/console/nodes/se-sto-a?range=7d", "dimension=node", []string{"This node has not polled"}},
	} {
		res, page := get(t, c, srv.URL+tc.path)
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d", tc.path, res.StatusCode)
		}
		m := seriesAttr.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("%s: no chart container:\n%.2000s", tc.path, page)
		}
		var s adminapi.Series
		if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &s); err != nil {
			t.Fatalf("%s: data-series: %v", tc.path, err)
		}
		if s.Total.Requests != 4 || s.Total.Errors != 1 || s.Total.TTFTMS.Count != 4 || len(s.Points) == 0 {
			t.Errorf("%s: series total %+v", tc.path, s.Total)
		}
		if src := html.UnescapeString(m[2]); !strings.HasPrefix(src, "/console/series?") || !strings.Contains(src, tc.source) {
			t.Errorf("%s: data-source %q", tc.path, src)
		}
		text := html.UnescapeString(page)
		for _, w := range append(tc.want, `<script src="/console/static/uplot/uPlot.iife.min.js" defer>`, `/console/static/live.js`,
			`data-chart="ttft"`, `data-chart="spend"`, `id="live-error-rate">25.0 %`, `id="live-classes">1 failed · timeout 1<`) {
			if !strings.Contains(text, w) {
				t.Errorf("%s lacks %q", tc.path, w)
			}
		}
	}
	// The charts' refresh: the same series as JSON, for the session only.
	res, body := get(t, c, srv.URL+"/console/series?dimension=route&key=llama-se&range=1h")
	var s adminapi.Series
	if res.StatusCode != 200 || json.Unmarshal([]byte(body), &s) != nil || s.Total.Requests != 4 || s.StepSeconds != 60 {
		t.Errorf("series JSON %d %.300s", res.StatusCode, body)
	}
	if res, body := get(t, c, srv.URL+"/console/series?dimension=planet&range=1h"); res.StatusCode != 400 || !strings.Contains(body, "dimension") {
		t.Errorf("bad series %d %s", res.StatusCode, body)
	}
	if res, _ := get(t, browser(t), srv.URL+"/console/series?dimension=all"); res.StatusCode != http.StatusSeeOther {
		t.Errorf("series without a session: %d", res.StatusCode)
	}
	// uPlot is served by the console, with its licence.
	for _, f := range []struct{ path, ctype, has string }{
		{"/console/static/uplot/uPlot.iife.min.js", "javascript", "uPlot"},
		{"/console/static/uplot/uPlot.min.css", "text/css", ".uplot"},
		{"/console/static/uplot/LICENSE", "text/plain", "MIT"},
		{"/console/static/live.js", "javascript", "new uPlot("},
	} {
		res, body := get(t, c, srv.URL+f.path)
		if res.StatusCode != 200 || !strings.Contains(res.Header.Get("Content-Type"), f.ctype) || !strings.Contains(body, f.has) {
			t.Errorf("%s: %d %s", f.path, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
}
