package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/alerts"
)

// The alerts page creates a rule (its secret shown once), lists it with how many subjects
// it fires for, shows the deliveries the evaluator made to a real receiver, and turns the
// rule off and deletes it; a bad threshold is refused and creates nothing.
func TestConsoleAlerts(t *testing.T) {
	srv, st := newConsole(t)
	ctx := context.Background()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	defer hook.Close()
	c := browser(t)
	c.Jar = insecureJar{jar: c.Jar}
	csrf := login(t, srv, c)

	bad := url.Values{"csrf": {csrf}, "name": {"quiet"}, "kind": {"node_silent"}, "threshold": {"10 minutes"}, "webhook_url": {hook.URL}}
	res, _ := post(t, c, srv.URL+"/console/alerts", bad)
	if _, shown := followed(t, c, srv.URL, res); !strings.Contains(shown, "such as 5m") {
		t.Fatalf("bad threshold not refused:\n%.3000s", shown)
	}
	form := url.Values{"csrf": {csrf}, "name": {"quiet nodes"}, "kind": {"node_silent"}, "threshold": {"1m"}, "webhook_url": {hook.URL}}
	res, _ = post(t, c, srv.URL+"/console/alerts", form)
	loc, shown := followed(t, c, srv.URL, res)
	secret := regexp.MustCompile(`<code id="rule-secret">(whsec_[0-9a-f]+)</code>`).FindStringSubmatch(shown)
	if loc != "/console/alerts" || secret == nil || !strings.Contains(shown, "1m0s") {
		t.Fatalf("created rule not shown with its secret:\n%.4000s", shown)
	}
	if _, again := get(t, c, srv.URL+"/console/alerts"); strings.Contains(again, secret[1]) {
		t.Fatal("the secret is shown again")
	}
	rules, err := st.ListAlertRules(ctx)
	if err != nil || len(rules) != 1 {
		t.Fatalf("rules %+v %v", rules, err)
	}
	id := rules[0].ID

	// A node silent for longer than the threshold: the evaluator's delivery shows.
	if err := st.TouchNode(ctx, "node-z", 1, "se", 0); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ev, err := alerts.New(alerts.Config{Store: st, Logger: quiet, Now: func() time.Time { return time.Now().Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Evaluate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ev.Deliver(ctx); err != nil {
		t.Fatal(err)
	}
	_, page := get(t, c, srv.URL+"/console/alerts")
	row := page[strings.Index(page, `<tr id="rule-`+id+`">`):]
	row = row[:strings.Index(row, "</tr>")]
	if !strings.Contains(row, `<td class="num bad">1</td>`) || !strings.Contains(page, `<td class="delivery-state">delivered (202)</td>`) ||
		!strings.Contains(page, "node-z") {
		t.Fatalf("firing rule or delivery not shown:\nrow %s\n%.5000s", row, page[strings.Index(page, "Recent deliveries"):])
	}

	for _, step := range []struct{ action, notice string }{{"disable", "disabled"}, {"delete", "deleted"}} {
		res, _ := post(t, c, srv.URL+"/console/alerts/"+id+"/"+step.action, url.Values{"csrf": {csrf}})
		if _, shown := followed(t, c, srv.URL, res); !strings.Contains(shown, "Alert rule "+id+" "+step.notice+".") {
			t.Fatalf("%s: %.3000s", step.action, shown)
		}
	}
	if rules, _ := st.ListAlertRules(ctx); len(rules) != 0 {
		t.Fatalf("rules after delete %+v", rules)
	}
}
