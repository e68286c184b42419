package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/internalapi"
)

// A node's route problems and credential names, reported with its snapshot poll, show in
// the node and route listings, and a catalogue naming a credential the node lacks is warned
// about before (dry run) and when it is loaded.
func TestRouteHealthReportedAndWarned(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200)
	path := "/internal/v1/snapshot?have=0&hash=" + strings.Repeat("0", 64) + "&issued=0"
	e.mustStatus(e.do("GET", path, nodeToken, nil, map[string]string{
		internalapi.HeaderNodeID:        "node-health",
		internalapi.HeaderRouteProblems: "llama-se=credential_missing&embed-de=unreachable",
		internalapi.HeaderCredentials:   "GATEWAY_CREDENTIAL_OTHER",
	}), 200)

	var nodes adminapi.List[adminapi.Node]
	e.mustStatus(e.admin("GET", "/admin/v1/nodes", nil), 200).json(t, &nodes)
	var n *adminapi.Node
	for i := range nodes.Data {
		if nodes.Data[i].NodeID == "node-health" {
			n = &nodes.Data[i]
		}
	}
	if n == nil || n.RouteProblems["llama-se"] != internalapi.ProblemCredentialMissing || n.RouteProblems["embed-de"] != internalapi.ProblemUnreachable ||
		len(n.Credentials) != 1 || n.RouteHealthReportedAt == nil {
		t.Fatalf("node %+v", n)
	}
	var routes adminapi.List[adminapi.ListedRoute]
	e.mustStatus(e.admin("GET", "/admin/v1/routes", nil), 200).json(t, &routes)
	seen := 0
	for _, r := range routes.Data {
		switch r.ID {
		case "llama-se":
			seen++
			if r.Problems["node-health"] != internalapi.ProblemCredentialMissing {
				t.Errorf("llama-se problems %v", r.Problems)
			}
		case "embed-de":
			seen++
			if r.Problems["node-health"] != internalapi.ProblemUnreachable {
				t.Errorf("embed-de problems %v", r.Problems)
			}
		}
	}
	if seen != 2 {
		t.Fatalf("routes %+v", routes.Data)
	}

	var res adminapi.CatalogResult
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog?dry_run=true", testCatalog), 200).json(t, &res)
	all := strings.Join(res.Warnings, "\n")
	if !res.DryRun || !strings.Contains(all, "route llama-se: credentials_ref env:GATEWAY_CREDENTIAL_VLLM is not set on node node-health") ||
		!strings.Contains(all, "route embed-de: node node-health (unreachable) cannot use it now") {
		t.Fatalf("dry run: %+v", res)
	}
	var loaded adminapi.CatalogResult
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200).json(t, &loaded)
	if loaded.DryRun || len(loaded.Warnings) != 2 {
		t.Fatalf("load: %+v", loaded)
	}
	// A node that reports an unreadable value keeps its last report.
	e.mustStatus(e.do("GET", path, nodeToken, nil, map[string]string{internalapi.HeaderNodeID: "node-health", internalapi.HeaderRouteProblems: "x=bogus"}), 200)
	e.mustStatus(e.admin("GET", "/admin/v1/nodes", nil), 200).json(t, &nodes)
	for _, nd := range nodes.Data {
		if nd.NodeID == "node-health" && len(nd.RouteProblems) != 2 {
			t.Errorf("an unreadable report replaced the last one: %v", nd.RouteProblems)
		}
	}
}

// The overview sums today's and this month's spend and today's results, and lists low
// balances, pending signups and routes nodes report problems with.
func TestOverview(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200)
	low := e.createAccount("Low AB", "se")
	path := "/internal/v1/snapshot?have=0&hash=" + strings.Repeat("0", 64) + "&issued=0"
	e.mustStatus(e.do("GET", path, nodeToken, nil, map[string]string{internalapi.HeaderNodeID: "node-ov",
		internalapi.HeaderRouteProblems: "embed-de=tls"}), 200)
	var o adminapi.Overview
	e.mustStatus(e.admin("GET", "/admin/v1/overview", nil), 200).json(t, &o)
	found := false
	for _, a := range o.LowBalance {
		found = found || a.ID == low
	}
	if !found || o.UnhealthyRoutes["embed-de"] != "tls on node-ov" || o.LowBalanceSEK != "50.00" {
		t.Fatalf("overview %+v", o)
	}
}

// A node's refusal counts are summed per day, key, status and code, listed for the account
// with their total, and a report with a nonsensical entry is refused whole.
func TestRefusalReports(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := e.createAccount("Refused AB", "se")
	day := time.Now().UTC().Format(time.DateOnly)
	post := func(rep internalapi.RefusalReport) int {
		return e.do("POST", internalapi.PathRefusals, nodeToken, rep, map[string]string{internalapi.HeaderNodeID: "node-r"}).status
	}
	entry := internalapi.RefusalCount{Day: day, AccountID: acct, KeyID: "key_0123456789ab", Status: 402, Code: "insufficient_quota", Count: 3}
	if st := post(internalapi.RefusalReport{Entries: []internalapi.RefusalCount{entry, entry}}); st != 204 {
		t.Fatalf("report: %d", st)
	}
	other := entry
	other.Status, other.Code, other.Count = 429, "rate_limit_exceeded", 1
	if st := post(internalapi.RefusalReport{Entries: []internalapi.RefusalCount{other}}); st != 204 {
		t.Fatalf("second report: %d", st)
	}
	bad := entry
	bad.Status = 200
	if st := post(internalapi.RefusalReport{Entries: []internalapi.RefusalCount{entry, bad}}); st != 400 {
		t.Fatalf("a report with a 200 entry: %d", st)
	}
	var rep adminapi.RefusalReport
	e.mustStatus(e.admin("GET", "/admin/v1/accounts/"+acct+"/refusals", nil), 200).json(t, &rep)
	if rep.Days != 7 || rep.Total != 7 || len(rep.Data) != 2 || rep.Data[0].Code != "insufficient_quota" || rep.Data[0].Count != 6 {
		t.Fatalf("refusals %+v", rep)
	}
	e.mustStatus(e.admin("GET", "/admin/v1/accounts/"+acct+"/refusals?days=0", nil), 400)
	e.mustStatus(e.admin("GET", "/admin/v1/accounts/acct_0000000000000000/refusals", nil), 404)
}
