package api_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/usage"
)

// ledgerGap returns balance − Σ ledger for the account, computed in numeric so that a
// ledger whose sum leaves the int64 range shows as a gap, not as an error.
func (e *env) ledgerGap(acct string) string {
	e.t.Helper()
	var gap string
	err := e.store.Pool().QueryRow(context.Background(), `SELECT (b.balance_micro_sek::numeric -
			COALESCE((SELECT sum(amount_micro_sek) FROM ledger WHERE account_id = b.account_id), 0))::text
		FROM account_balances b WHERE b.account_id = $1`, acct).Scan(&gap)
	if err != nil {
		e.t.Fatal(err)
	}
	return gap
}

type usage30d struct {
	BalanceMicroSEK int64 `json:"balance_micro_sek"`
	Usage           []struct {
		Model            string `json:"model"`
		Requests         int64  `json:"requests"`
		PromptTokens     int64  `json:"prompt_tokens"`
		CompletionTokens int64  `json:"completion_tokens"`
		PriceMicroSEK    int64  `json:"price_micro_sek"`
	} `json:"usage_30d"`
}

func (e *env) account30d(acct string) usage30d {
	e.t.Helper()
	var u usage30d
	e.mustStatus(e.node("GET", "/v1/service/account", acct), 200).json(e.t, &u)
	return u
}

func chatRecord(id, acct string, prompt, completion int64) usage.Record {
	return usage.Record{RequestID: id, TS: time.Now().UTC(), AccountID: acct, Model: "llama-3.1-8b",
		Endpoint: "/v1/chat/completions", Stream: true, Provider: "vllm", Status: 200, Result: usage.ResultOK,
		PromptTokens: prompt, CompletionTokens: completion, PriceMicroSEK: money.Price(prompt, completion, 150, 300)}
}

// Two concurrent answers reporting completion_tokens = int64 max, priced (saturated) at
// the int64 maximum and delivered in one batch: the debits' sum wrapped in Go and the
// balance rose by 2 µSEK while the ledger held both debits (balance ≠ Σ ledger), and
// usage_30d showed negative tokens. Now both records are rejected, nothing is charged, the
// batch is settled (200) and the node's next records apply.
func TestUsageInt64MaxTokensCannotRaiseBalance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200)
	acct := e.createAccount("Acme", "se")
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+acct+"/credits", map[string]string{"amount_sek": "10"}), 200)
	huge := []usage.Record{chatRecord("req_huge_1", acct, 12, math.MaxInt64), chatRecord("req_huge_2", acct, 12, math.MaxInt64)}
	if huge[0].PriceMicroSEK != math.MaxInt64 {
		t.Fatalf("price %d, want the saturated int64 max", huge[0].PriceMicroSEK)
	}
	// The same batch twice at once, as a node retrying after a lost reply would.
	var wg sync.WaitGroup
	replies := make([]usage.Reply, 2)
	statuses := make([]int, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i], statuses[i] = e.postUsage(usage.Batch{NodeID: "node-1", BatchID: "b-huge", Records: huge})
		}()
	}
	wg.Wait()
	for i := range 2 {
		if statuses[i] != 200 || replies[i].Inserted != 0 || replies[i].Rejected != 2 {
			t.Fatalf("delivery %d: status %d reply %+v, want 200 with both records rejected", i, statuses[i], replies[i])
		}
	}
	if gap := e.ledgerGap(acct); gap != "0" {
		t.Fatalf("balance − Σ ledger = %s µSEK", gap)
	}
	u := e.account30d(acct)
	if u.BalanceMicroSEK != 10*money.MicroPerSEK {
		t.Fatalf("balance %d after rejected records, want %d", u.BalanceMicroSEK, 10*money.MicroPerSEK)
	}
	for _, m := range u.Usage {
		if m.PromptTokens < 0 || m.CompletionTokens < 0 || m.PriceMicroSEK < 0 || m.Requests < 0 {
			t.Fatalf("usage_30d negative: %+v", u.Usage)
		}
	}
	// The rejections are kept, once each, with their reason.
	var n int
	var reason string
	if err := e.store.Pool().QueryRow(context.Background(), `SELECT count(*), min(reason) FROM rejected_records WHERE account_id = $1`, acct).Scan(&n, &reason); err != nil {
		t.Fatal(err)
	}
	if n != 2 || !strings.HasPrefix(reason, "tokens_out_of_bounds") {
		t.Fatalf("rejected_records: %d rows, reason %q", n, reason)
	}
	// The node goes on: a normal record is charged exactly.
	ok := chatRecord("req_ok", acct, 1000, 500)
	rep, status := e.postUsage(usage.Batch{NodeID: "node-1", BatchID: "b-ok", Records: []usage.Record{ok}})
	if status != 200 || rep.Inserted != 1 || rep.Balances[0].MicroSEK != 10*money.MicroPerSEK-ok.PriceMicroSEK {
		t.Fatalf("next batch: %d %+v", status, rep)
	}
	if gap := e.ledgerGap(acct); gap != "0" {
		t.Fatalf("balance − Σ ledger = %s µSEK", gap)
	}
}

// A record priced at the int64 maximum (an answer with prompt_tokens 1e999, clamped by
// the node) went into the daily aggregate; the next batch for that account, model and day
// failed with "bigint out of range" in the upsert, every retry answered 503 and the node's
// spool stalled. Now the record is rejected and every later batch applies.
func TestUsageInt64MaxPriceDoesNotStallTheSpool(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200)
	acct := e.createAccount("Acme", "se")
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+acct+"/credits", map[string]string{"amount_sek": "10"}), 200)
	bad := chatRecord("req_inf", acct, math.MaxInt64, 3)
	bad.PriceMicroSEK = math.MaxInt64
	first, status := e.postUsage(usage.Batch{NodeID: "node-1", BatchID: "b1", Records: []usage.Record{bad}})
	if status != 200 {
		t.Fatalf("batch with the max-priced record: %d %+v", status, first)
	}
	want := int64(10 * money.MicroPerSEK)
	for i := range 5 { // the node's later batches, and retries of them, all settle
		r := chatRecord(fmt.Sprintf("req_t%d", i), acct, 100, 50)
		for try := range 2 {
			rep, status := e.postUsage(usage.Batch{NodeID: "node-1", BatchID: fmt.Sprintf("b%d-%d", i+2, try), Records: []usage.Record{r}})
			if status != 200 {
				t.Fatalf("batch %d try %d: status %d (spool stalled)", i, try, status)
			}
			if try == 0 {
				want -= r.PriceMicroSEK
			}
			if rep.Balances[0].MicroSEK != want {
				t.Fatalf("batch %d: balance %d, want %d", i, rep.Balances[0].MicroSEK, want)
			}
		}
	}
	if first.Inserted != 0 || first.Rejected != 1 {
		t.Fatalf("max-priced record not rejected: %+v", first)
	}
	if gap := e.ledgerGap(acct); gap != "0" {
		t.Fatalf("balance − Σ ledger = %s µSEK", gap)
	}
	u := e.account30d(acct)
	if len(u.Usage) != 1 || u.Usage[0].Requests != 5 || u.Usage[0].PromptTokens != 500 || u.Usage[0].PriceMicroSEK != 10*money.MicroPerSEK-want {
		t.Fatalf("usage_30d %+v", u.Usage)
	}
}

// A batch with a record that does not decode (a string where a count belongs) settles:
// the record is rejected alone, the others apply.
func TestUsageUndecodableRecordRejectedAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200)
	acct := e.createAccount("Acme", "se")
	good := chatRecord("req_good", acct, 10, 10)
	body := fmt.Sprintf(`{"node_id":"node-1","batch_id":"b1","records":[%s,{"request_id":"req_bad","prompt_tokens":"many"},{"request_id":"req_nul\u0000","account_id":%q,"ts":"2026-01-01T00:00:00Z","result":"ok"}]}`,
		good.AppendJSON(nil), acct)
	r := e.do("POST", internalapi.PathUsage, nodeToken, body, nil)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var rep usage.Reply
	r.json(t, &rep)
	if rep.Inserted != 1 || rep.Rejected != 2 || rep.Duplicates != 0 {
		t.Fatalf("reply %+v", rep)
	}
	var reasons []string
	rows, _ := e.store.Pool().Query(context.Background(), `SELECT reason FROM rejected_records ORDER BY reason`)
	for rows.Next() {
		var s string
		rows.Scan(&s)
		reasons = append(reasons, s)
	}
	if len(reasons) != 2 || !strings.HasPrefix(reasons[0], "invalid") || !strings.HasPrefix(reasons[1], "undecodable") {
		t.Fatalf("reasons %q", reasons)
	}
	// The operator sees them, newest first, with the record as sent.
	var list adminapi.RejectedRecords
	e.mustStatus(e.admin("GET", "/admin/v1/rejected-records?limit=1", nil), 200).json(t, &list)
	if list.Total != 2 || len(list.Data) != 1 {
		t.Fatalf("rejected-records list %+v", list)
	}
	e.mustStatus(e.admin("GET", "/admin/v1/rejected-records", nil), 200).json(t, &list)
	got := map[string]string{}
	for _, d := range list.Data {
		if d.NodeID != "node-1" || d.BatchID != "b1" {
			t.Fatalf("rejected-records list %+v", list)
		}
		got[d.RequestID] = d.Record
	}
	if len(got) != 2 || !strings.Contains(got["req_bad"], `"prompt_tokens":"many"`) || !strings.Contains(got["req_nul\uFFFD"], `"req_nul\u0000"`) {
		t.Fatalf("rejected-records list %+v", list)
	}
	e.mustStatus(e.admin("GET", "/admin/v1/rejected-records?limit=0", nil), 400)
	e.mustStatus(e.do("GET", "/admin/v1/rejected-records", nodeToken, nil, nil), 401)
}
