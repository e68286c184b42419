package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sekgate/gateway/internal/poll"
)

// The console's live service view in headless Chromium: traffic sent through the data
// plane (plain and streamed chat, and requests to a model whose only route is dead)
// reaches the per-minute series, and the overview, account, model, route and node pages
// draw it with uPlot (the script served by the console), for an operator and a viewer.
// Screenshots go where TestConsole_Browser puts its own (live-*.png).
func TestConsole_LiveCharts(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	shots := screenshotDir(t, s)
	const opPW, viewerPW = "live charts operator password", "live charts viewer password"
	s.Admin(t, "POST", "/admin/v1/operators", map[string]any{"name": "live-operator", "role": "operator", "password": opPW})
	s.Admin(t, "POST", "/admin/v1/operators", map[string]any{"name": "live-viewer", "role": "viewer", "password": viewerPW})

	// Six answered requests (three streamed) and two to the dead route: 25 % errors.
	a := s.NewAccount(t, "se", 100, modelChat, modelDead)
	for i := range 6 {
		r := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat, "stream", i%2 == 0))
		if r.Status != 200 {
			t.Fatalf("chat %d: %d %s", i, r.Status, r.Body)
		}
	}
	for range 2 {
		if r := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelDead)); r.Status < 500 {
			t.Fatalf("dead route answered %d", r.Status)
		}
	}
	// The node sends its records every 50 ms; wait until the account's series holds them.
	series := func(dim, key string) map[string]any {
		q := url.Values{"dimension": {dim}}
		if key != "" {
			q.Set("key", key)
		}
		return s.Admin(t, "GET", "/admin/v1/series?"+q.Encode(), nil)
	}
	total := func(m map[string]any, field string) float64 {
		tot, _ := m["total"].(map[string]any)
		v, _ := tot[field].(float64)
		return v
	}
	// The node's batches arrive over a real connection.
	if !poll.WaitEvery(30*time.Second, 100*time.Millisecond, func() bool { return total(series("account", a.ID), "requests") >= 8 }) {
		t.Fatalf("the account's series holds %v requests, want 8", total(series("account", a.ID), "requests"))
	}

	ctx := browser(t, 1400)
	base := s.AdminURL + "/console"
	within := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 60*time.Second) }
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	run := stepRunner(t, ctx)
	eval := func(js string) string {
		t.Helper()
		c, cancel := within()
		defer cancel()
		v, err := chromedp.Run(c, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("evaluate %.80s: %v", js, err)
		}
		return v
	}
	shot := func(name string) {
		t.Helper()
		c, cancel := within()
		defer cancel()
		b, err := chromedp.Run(c, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := writePNG(filepath.Join(shots, name+".png"), b); err != nil {
			t.Fatal(err)
		}
	}
	login := func(name, pw string) {
		t.Helper()
		run("log in as "+name, chromedp.Navigate(base+"/login"), chromedp.WaitVisible(css("#name")),
			chromedp.SendKeys(css("#name"), name), chromedp.SendKeys(css("#password"), pw),
			chromedp.Click(css("#login")), chromedp.WaitVisible(css("#whoami")))
	}
	// charts opens a page and waits until uPlot drew its six charts; it returns the
	// requests of the whole range as the charts' series has them.
	charts := func(path string) float64 {
		t.Helper()
		run("open "+path, chromedp.Navigate(base+path), chromedp.WaitVisible(css("#live-charts[data-drawn]")))
		if n := eval(`String(document.querySelectorAll("#live-charts figure .uplot canvas").length)`); n != "6" {
			t.Fatalf("%s: %s charts drawn, want 6", path, n)
		}
		var drawn struct {
			Total  struct{ Requests float64 }
			Points []struct{ Requests float64 }
		}
		if err := json.Unmarshal([]byte(eval(`document.getElementById("live-charts").dataset.series`)), &drawn); err != nil {
			t.Fatal(err)
		}
		var sum float64
		for _, p := range drawn.Points {
			sum += p.Requests
		}
		if sum != drawn.Total.Requests || eval(`document.getElementById("live-charts").dataset.drawn`) != fmt.Sprint(len(drawn.Points)) {
			t.Fatalf("%s: charts drew %d points summing to %v of %v requests", path, len(drawn.Points), sum, drawn.Total.Requests)
		}
		return drawn.Total.Requests
	}

	login("live-operator", opPW)
	if n := charts("/accounts/" + a.ID); n != 8 {
		t.Errorf("account page charts %v requests, want 8", n)
	}
	if got := eval(`document.getElementById("live-error-rate").textContent`); got != "25.0 %" {
		t.Errorf("account error rate %q, want 25.0 %%", got)
	}
	if got := eval(`document.getElementById("live-ttft").textContent`); !strings.HasSuffix(got, " ms") {
		t.Errorf("account time to first token %q", got)
	}
	shot("live-account")
	for _, p := range []struct {
		path, name string
		atLeast    float64
	}{
		{"/overview", "live-overview", 8},
		{"/models/" + modelChat + "?range=6h", "live-model", 6},
		{"/routes/chat-se?range=24h", "live-route", 6},
		{"/nodes/conformance-1?range=7d", "live-node", 8},
	} {
		if n := charts(p.path); n < p.atLeast {
			t.Errorf("%s charts %v requests, want at least %v", p.path, n, p.atLeast)
		}
		shot(p.name)
	}
	// A range switch is a link; the chosen range is marked.
	run("range switch", chromedp.Navigate(base+"/overview"), chromedp.WaitVisible(css(`.ranges a[href="?range=24h"]`)),
		chromedp.Click(css(`.ranges a[href="?range=24h"]`)), chromedp.WaitVisible(css(`.ranges a.on[href="?range=24h"]`)),
		chromedp.WaitVisible(css("#live-charts[data-drawn]")))

	// A viewer sees the same charts.
	run("log out", chromedp.Click(css("header form.who button")), chromedp.WaitVisible(css("#name")))
	login("live-viewer", viewerPW)
	if n := charts("/accounts/" + a.ID); n != 8 {
		t.Errorf("viewer's account page charts %v requests, want 8", n)
	}
}
