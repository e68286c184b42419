package api_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// Budgets are set and cleared through the admin API, audited with their state before
// and after, shown with the spend of their period, and reach nodes of protocol 3 in the
// snapshot (and older nodes not at all).
func TestAdminBudgets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200)
	acct := e.createAccount("Budget AB", "se")
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+acct+"/credits", map[string]string{"amount_sek": "10"}), 200)
	var k adminapi.Key
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+acct+"/keys", map[string]any{"name": "ci"}), 201).json(t, &k)

	var st adminapi.BudgetState
	e.mustStatus(e.admin("PUT", "/admin/v1/accounts/"+acct+"/budget", adminapi.SetBudgetRequest{LimitSEK: "5.00"}), 200).json(t, &st)
	if st.Budget == nil || st.Budget.Period != "month" || st.Budget.LimitMicroSEK != 5_000_000 || st.Budget.LimitSEK != "5.00" {
		t.Fatalf("account budget %+v", st.Budget)
	}
	e.mustStatus(e.admin("PUT", "/admin/v1/keys/"+k.ID+"/budget", adminapi.SetBudgetRequest{Period: "day", LimitSEK: "0.50"}), 200).json(t, &st)
	if st.KeyID != k.ID || st.AccountID != acct || st.Budget == nil || st.Budget.Period != "day" ||
		!st.Budget.ResetsAt.Equal(snapshot.PeriodEnd("day", time.Now())) {
		t.Fatalf("key budget %+v %+v", st, st.Budget)
	}

	// Spend of the period shows on the budgets.
	rec := usage.Record{RequestID: "req_tb1", TS: time.Now(), AccountID: acct, KeyID: &k.ID, Model: "llama-3.1-8b", Status: 200,
		Result: usage.ResultOK, PromptTokens: 1000, CompletionTokens: 500, PriceMicroSEK: 3000}
	rep, status := e.postUsage(usage.Batch{NodeID: "node-2", BatchID: "b1", Records: []usage.Record{rec}})
	if status != 200 || len(rep.Spent) != 2 || rep.Spent[0].MicroSEK != 3000 || rep.Spent[1].KeyID != k.ID {
		t.Fatalf("usage reply %d %+v", status, rep)
	}
	var list adminapi.List[adminapi.Budget]
	e.mustStatus(e.admin("GET", "/admin/v1/accounts/"+acct+"/budgets", nil), 200).json(t, &list)
	if len(list.Data) != 2 || list.Data[0].KeyID != "" || list.Data[0].SpentMicroSEK != 3000 || list.Data[0].SpentSEK != "0.003" ||
		list.Data[1].KeyID != k.ID || list.Data[1].KeyName != "ci" || list.Data[1].SpentMicroSEK != 3000 {
		t.Fatalf("budgets %+v", list.Data)
	}

	// Nodes of protocol 3 get the budgets in the snapshot, with each budget's spend as of
	// the snapshot's ledger sequence (spend alone does not make a new snapshot: nodes
	// follow it through usage replies and the balance watch, as balances); version 2 nodes
	// get a snapshot without them that still verifies.
	e.waitSnapshotAs(t, internalapi.ProtocolVersion, func(s snapshot.Snapshot) bool {
		return len(s.Accounts) == 1 && s.Accounts[0].Budget != nil && len(s.Keys) == 1 && s.Keys[0].Budget != nil &&
			len(s.Spent) == 2 && (s.Spent[1].MicroSEK == 3000 || s.Spent[1].MicroSEK == 0 && s.BalanceSeq < rep.BalanceSeq)
	})
	old := e.do("GET", internalapi.PathSnapshot+"?have=0&wait=0", nodeToken, nil,
		map[string]string{internalapi.HeaderNodeID: "node-old", internalapi.HeaderProtocol: "2"})
	var os snapshot.Snapshot
	e.mustStatus(old, 200).json(t, &os)
	if err := os.Verify(); err != nil || os.Accounts[0].Budget != nil || os.Keys[0].Budget != nil || len(os.Spent) != 0 {
		t.Fatalf("protocol 2 snapshot: verify %v, account %+v, keys %+v, spent %+v", err, os.Accounts[0], os.Keys, os.Spent)
	}

	// The audit log has the budget before and after.
	en := e.lastAudit(t, k.ID)
	if en.Action != "PUT /admin/v1/keys/{id}/budget" || field(t, en.Before, "budget") != "null" || field(t, en.After, "budget") == "null" {
		t.Fatalf("audit entry %+v: before %s after %s", en, en.Before, en.After)
	}
	e.mustStatus(e.admin("DELETE", "/admin/v1/keys/"+k.ID+"/budget", nil), 200).json(t, &st)
	if st.Budget != nil {
		t.Fatalf("cleared key budget %+v", st.Budget)
	}
	en = e.lastAudit(t, k.ID)
	if en.Action != "DELETE /admin/v1/keys/{id}/budget" || field(t, en.Before, "budget") == "null" || field(t, en.After, "budget") != "null" {
		t.Fatalf("audit entry %+v: before %s after %s", en, en.Before, en.After)
	}
	e.mustStatus(e.admin("DELETE", "/admin/v1/accounts/"+acct+"/budget", nil), 200)
	e.mustStatus(e.admin("GET", "/admin/v1/accounts/"+acct+"/budgets", nil), 200).json(t, &list)
	if len(list.Data) != 0 {
		t.Fatalf("budgets after clearing %+v", list.Data)
	}
}

// waitSnapshotAs is waitSnapshot for a node of the given internal protocol version.
func (e *env) waitSnapshotAs(t *testing.T, protocol int, ok func(snapshot.Snapshot) bool) {
	t.Helper()
	var snap snapshot.Snapshot
	have, hash, issued := int64(0), strings.Repeat("0", 64), int64(0)
	h := map[string]string{internalapi.HeaderNodeID: "node-1", internalapi.HeaderProtocol: strconv.Itoa(protocol)}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		r := e.do("GET", fmt.Sprintf("%s?have=%d&hash=%s&issued=%d&wait=2", internalapi.PathSnapshot, have, hash, issued), nodeToken, nil, h)
		if r.status == http.StatusNotModified {
			continue // nothing newer within the wait
		}
		e.mustStatus(r, 200).json(t, &snap)
		if ok(snap) {
			return
		}
		sh, err := snapshot.StructureHash(&snap.Content)
		if err != nil {
			t.Fatal(err)
		}
		have, hash, issued = snap.Version, sh, snap.IssuedAt.UnixNano()
	}
	t.Fatalf("snapshot never showed the change: accounts %+v keys %+v spent %+v", snap.Accounts, snap.Keys, snap.Spent)
}

func TestAdminBudgetRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := e.createAccount("Budget refusals AB", "se")
	viewer := e.login("vic", "viewer")
	tests := []struct {
		name, method, path string
		token              string
		body               any
		status             int
		param              string
	}{
		{"unknown period", "PUT", "/admin/v1/accounts/" + acct + "/budget", adminToken, map[string]any{"period": "year", "limit_sek": "1"}, 400, "period"},
		{"number limit", "PUT", "/admin/v1/accounts/" + acct + "/budget", adminToken, map[string]any{"limit_sek": 5}, 400, "limit_sek"},
		{"zero limit", "PUT", "/admin/v1/accounts/" + acct + "/budget", adminToken, map[string]any{"limit_sek": "0"}, 400, "limit_sek"},
		{"no limit", "PUT", "/admin/v1/accounts/" + acct + "/budget", adminToken, map[string]any{"period": "day"}, 400, "limit_sek"},
		{"unknown field", "PUT", "/admin/v1/accounts/" + acct + "/budget", adminToken, map[string]any{"limit_sek": "1", "cap": 1}, 400, ""},
		{"unknown account", "PUT", "/admin/v1/accounts/acct_0000000000000000/budget", adminToken, map[string]any{"limit_sek": "1"}, 404, ""},
		{"unknown key", "DELETE", "/admin/v1/keys/key_000000000000/budget", adminToken, nil, 404, ""},
		{"malformed key", "PUT", "/admin/v1/keys/nope/budget", adminToken, map[string]any{"limit_sek": "1"}, 404, ""},
		{"budgets of unknown account", "GET", "/admin/v1/accounts/acct_0000000000000000/budgets", adminToken, nil, 404, ""},
		{"viewer may not set", "PUT", "/admin/v1/accounts/" + acct + "/budget", viewer, map[string]any{"limit_sek": "1"}, 403, ""},
		{"viewer may read", "GET", "/admin/v1/accounts/" + acct + "/budgets", viewer, nil, 200, ""},
	}
	for _, tc := range tests {
		r := e.do(tc.method, tc.path, tc.token, tc.body, nil)
		if r.status != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.name, r.status, tc.status, r.body)
			continue
		}
		if tc.param != "" {
			if _, _, param := r.errInfo(t); param != tc.param {
				t.Errorf("%s: param %q, want %q", tc.name, param, tc.param)
			}
		}
	}
}
