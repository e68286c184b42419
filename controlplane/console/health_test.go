package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// What nodes report of routes they cannot use shows on the Nodes and Catalogue pages, and a
// catalogue preview warns about a credential the nodes lack.
func TestConsoleShowsRouteHealth(t *testing.T) {
	srv, st := newConsole(t)
	ctx := context.Background()
	if err := st.TouchNode(ctx, "node-h", 0, "se-sto", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := st.ReportRouteHealth(ctx, "node-h", map[string]string{"tiny-se": "unreachable"}, []string{}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", srv.URL+"/admin/v1/operators", strings.NewReader(`{"name":"ada","role":"admin","password":"ada's long password"}`))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 201 {
		t.Fatalf("create admin: %v %v", res, err)
	}
	c := browser(t)
	c.Jar = insecureJar{jar: c.Jar}
	csrf := loginAs(t, srv, c, "ada", "ada's long password")
	if _, page := get(t, c, srv.URL+"/console/nodes"); !strings.Contains(page, "Routes it cannot use") || !strings.Contains(page, "tiny-se: unreachable") {
		t.Errorf("nodes page:\n%.3000s", page)
	}
	withRef := strings.Replace(catalogueYAML, "protocols:", `credentials_ref: "env:GATEWAY_CREDENTIAL_TINY", protocols:`, 1)
	_, page := post(t, c, srv.URL+"/console/catalogue/preview", url.Values{"csrf": {csrf}, "catalogue": {withRef}})
	if !strings.Contains(page, "route tiny-se: credentials_ref env:GATEWAY_CREDENTIAL_TINY is not set on node node-h") {
		t.Errorf("preview without the warning:\n%.3000s", page)
	}
}

// The records page offers the real results and the accounts by name, takes UTC days, and
// exports what it lists as CSV.
func TestConsoleRecordsFiltersAndCSV(t *testing.T) {
	srv, _ := newConsole(t)
	c := browser(t)
	c.Jar = insecureJar{jar: c.Jar}
	csrf := login(t, srv, c)
	post(t, c, srv.URL+"/console/accounts", url.Values{"csrf": {csrf}, "customer": {"Records AB"}, "residency": {"se"}})
	_, page := get(t, c, srv.URL+"/console/records?from_day=2026-11-01&to_day=2026-11-02&result=upstream_error")
	for _, want := range []string{`<option selected>upstream_error</option>`, `<option>no_route</option>`, ">Records AB</option>",
		`href="/console/records.csv?`, "0 records on this page", "Time (UTC)"} {
		if !strings.Contains(page, want) {
			t.Errorf("records page lacks %q", want)
		}
	}
	res, body := get(t, c, srv.URL+"/console/records.csv?result=ok")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") ||
		!strings.HasPrefix(body, "time_utc,request_id,account_id,customer,") {
		t.Fatalf("csv: %d %q %q", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
}
