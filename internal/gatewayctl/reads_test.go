package gatewayctl

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/api/apitest"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/usage"
)

// gatewayctl records, usage and ledger against the real control plane on real Postgres,
// after a node delivered two records of an account: tables, --json and --csv agree with
// what was recorded and charged.
func TestRecordsUsageLedgerAgainstControlPlane(t *testing.T) {
	const tok = "adm_cli_reads_0123456789abcdef0123456789"
	h, _ := apitest.New(t, tok)
	admin, node := httptest.NewServer(h.Admin), httptest.NewServer(h.Node)
	t.Cleanup(admin.Close)
	t.Cleanup(node.Close)
	ctl := cliAgainst(t, admin.URL, tok)
	ctl("catalog", "load", filepath.Join("..", "..", "configs", "catalog.demo.yaml"))
	var acct struct{ ID string }
	if err := json.Unmarshal([]byte(ctl("--json", "accounts", "create", "--customer", "Reads AB", "--residency", "se")), &acct); err != nil {
		t.Fatal(err)
	}
	ctl("credit", acct.ID, "100", "--note", "Invoice 2026-11")
	var key struct{ ID string }
	if err := json.Unmarshal([]byte(ctl("--json", "keys", "create", acct.ID, "--name", "ci")), &key); err != nil {
		t.Fatal(err)
	}
	// A node delivers two records: 1,000 + 500 tokens ok, and 200 + 0 upstream_error.
	now := time.Now().UTC()
	price := money.Price(1000, 500, 100, 200)
	recs := []usage.Record{
		{RequestID: "req_reads_ok", TS: now, AccountID: acct.ID, KeyID: &key.ID, Model: "llama-3.1-8b-instruct", Endpoint: "/v1/chat/completions",
			Status: 200, Result: usage.ResultOK, PromptTokens: 1000, CompletionTokens: 500, PriceMicroSEK: price},
		{RequestID: "req_reads_err", TS: now, AccountID: acct.ID, KeyID: &key.ID, Model: "llama-3.1-8b-instruct", Endpoint: "/v1/chat/completions",
			Status: 502, Result: usage.ResultUpstreamError, PromptTokens: 200, PriceMicroSEK: money.Price(200, 0, 100, 200)},
	}
	body, _ := json.Marshal(usage.Batch{NodeID: "node-reads", BatchID: "b-reads", Records: recs})
	req, _ := http.NewRequest("POST", node.URL+internalapi.PathUsage, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+apitest.NodeToken)
	req.Header.Set(internalapi.HeaderNodeID, "node-reads")
	res, err := node.Client().Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("usage batch: %v %v", err, res)
	}
	res.Body.Close()
	total := recs[0].PriceMicroSEK + recs[1].PriceMicroSEK

	out := ctl("records", "--account", acct.ID)
	for _, want := range []string{"req_reads_ok", "req_reads_err", "upstream_error", key.ID, "2 records, " + money.FormatSEK(total) + " SEK"} {
		if !strings.Contains(out, want) {
			t.Errorf("records lacks %q:\n%s", want, out)
		}
	}
	if out := ctl("records", "--account", acct.ID, "--result", "upstream_error"); strings.Contains(out, "req_reads_ok") || !strings.Contains(out, "req_reads_err") {
		t.Errorf("records --result:\n%s", out)
	}
	var page struct{ Data []usage.Record }
	if err := json.Unmarshal([]byte(ctl("--json", "records", "--account", acct.ID, "--since", "1h")), &page); err != nil || len(page.Data) != 2 {
		t.Fatalf("records --json: %v %+v", err, page)
	}
	rows, err := csv.NewReader(strings.NewReader(ctl("--csv", "records", "--account", acct.ID))).ReadAll()
	if err != nil || len(rows) != 3 || rows[0][0] != "Time (UTC)" || rows[0][10] != "Price SEK" {
		t.Fatalf("records --csv: %v %q", err, rows)
	}
	for _, r := range rows[1:] {
		if r[1] == "req_reads_ok" && (r[8] != "1000" || r[9] != "500" || r[10] != money.FormatSEK(price)) {
			t.Errorf("csv row %q", r)
		}
	}

	out = ctl("usage", acct.ID, "--days", "2")
	if !strings.Contains(out, "llama-3.1-8b-instruct") || !strings.Contains(out, "last 2 days: "+money.FormatSEK(total)+" SEK") {
		t.Errorf("usage:\n%s", out)
	}
	rows, err = csv.NewReader(strings.NewReader(ctl("--csv", "usage", acct.ID))).ReadAll()
	if err != nil || len(rows) != 2 || rows[1][2] != "2" || rows[1][3] != "1200" || rows[1][4] != "500" {
		t.Errorf("usage --csv: %v %q", err, rows)
	}

	t.Log(ctl("records", "--account", acct.ID))
	t.Log(ctl("usage", acct.ID))
	out = ctl("ledger", acct.ID)
	t.Log(out)
	for _, want := range []string{"credit", "100.00", "Invoice 2026-11", "debit", "-" + money.FormatSEK(total)} {
		if !strings.Contains(out, want) {
			t.Errorf("ledger lacks %q:\n%s", want, out)
		}
	}
	rows, err = csv.NewReader(strings.NewReader(ctl("--csv", "ledger", acct.ID))).ReadAll()
	if err != nil || len(rows) != 3 || rows[0][3] != "Amount SEK" {
		t.Errorf("ledger --csv: %v %q", err, rows)
	}
	checkSeries(t, ctl, acct.ID, total)
}

// checkSeries reads the live service view of the two records' account, model and node.
func checkSeries(t *testing.T, ctl func(args ...string) string, acct string, total int64) {
	t.Helper()
	for _, args := range [][]string{{"--account", acct}, {"--model", "llama-3.1-8b-instruct", "--last", "2h", "--step", "10m"},
		{"--node", "node-reads", "--last", "30m"}, {}} {
		out := ctl(append([]string{"series"}, args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) < 3 {
			t.Fatalf("series %v:\n%s", args, out)
		}
		// The whole range: 2 requests, 1 error (50.0 %), 1200 tokens in, 500 out.
		tot := strings.Fields(lines[len(lines)-2])
		if tot[0] != "total" || tot[1] != "2" || tot[3] != "1" || tot[4] != "50.0" || tot[10] != "1200" || tot[11] != "500" ||
			tot[12] != money.FormatSEK(total) {
			t.Errorf("series %v total %q:\n%s", args, tot, out)
		}
	}
	var s struct {
		Dimension string
		Total     struct{ Requests, Errors int64 }
		Points    []json.RawMessage
	}
	if err := json.Unmarshal([]byte(ctl("--json", "series", "--account", acct, "--last", "1h", "--step", "1m")), &s); err != nil ||
		s.Dimension != "account" || s.Total.Requests != 2 || s.Total.Errors != 1 || len(s.Points) < 60 {
		t.Errorf("series --json: %v %+v", err, s)
	}
	rows, err := csv.NewReader(strings.NewReader(ctl("--csv", "series", "--last", "10m", "--step", "5m"))).ReadAll()
	if err != nil || len(rows) < 3 || rows[0][0] != "Time (UTC)" {
		t.Errorf("series --csv: %v %q", err, rows)
	}
}

// gatewayctl refusals lists what nodes reported refusing for the account.
func TestRefusalsAgainstControlPlane(t *testing.T) {
	const tok = "adm_cli_refusals_0123456789abcdef012345"
	h, _ := apitest.New(t, tok)
	admin, node := httptest.NewServer(h.Admin), httptest.NewServer(h.Node)
	t.Cleanup(admin.Close)
	t.Cleanup(node.Close)
	run := cliAgainst(t, admin.URL, tok)
	var acct struct{ ID string }
	if err := json.Unmarshal([]byte(run("--json", "accounts", "create", "--customer", "Refused AB", "--residency", "se")), &acct); err != nil {
		t.Fatal(err)
	}
	day := time.Now().UTC().Format(time.DateOnly)
	body, _ := json.Marshal(internalapi.RefusalReport{Entries: []internalapi.RefusalCount{
		{Day: day, AccountID: acct.ID, KeyID: "key_0123456789ab", Status: 402, Code: "insufficient_quota", Count: 4}}})
	req, _ := http.NewRequest("POST", node.URL+internalapi.PathRefusals, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+apitest.NodeToken)
	req.Header.Set(internalapi.HeaderNodeID, "node-r")
	if res, err := node.Client().Do(req); err != nil || res.StatusCode != 204 {
		t.Fatalf("report: %v %v", err, res)
	}
	out := run("refusals", acct.ID)
	for _, want := range []string{day, "key_0123456789ab", "402", "insufficient_quota", "last 7 days: 4 refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("refusals lacks %q:\n%s", want, out)
		}
	}
}

// cliAgainst returns a runner of gatewayctl against the admin API at url with token tok,
// which fails the test when a command fails and returns its standard output.
func cliAgainst(t *testing.T, url, tok string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		env := map[string]string{"GATEWAY_ADMIN_URL": url, "GATEWAY_ADMIN_TOKEN": tok}
		a := &app{out: &out, errOut: &errOut, getenv: func(k string) string { return env[k] }}
		root := a.root()
		root.SetArgs(args)
		root.SetOut(&out)
		root.SetErr(&errOut)
		if err := root.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("gatewayctl %s: %v %s", strings.Join(args, " "), err, errOut.String())
		}
		return out.String()
	}
}
