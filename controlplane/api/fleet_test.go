package api_test

import (
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/usage"
)

// TestBalancesFilteredByCountry: a node's balance watch lists only the accounts the
// snapshot for its country holds: a node in the US learns neither the ID nor the balance
// of an se or eu account, a node in Germany none of an se account, and a top-up of an
// account it may not see does not answer its watch.
func TestBalancesFilteredByCountry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := map[string]string{}
	for _, res := range []string{"se", "eu", "any"} {
		acct[res] = e.createAccount("Customer "+res, res)
		e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+acct[res]+"/credits", map[string]string{"amount_sek": "10"}), 200)
	}
	seen := func(country string, since int64, wait int) usage.BalanceUpdate {
		t.Helper()
		q := url.Values{"since": {fmt.Sprint(since)}, "wait": {fmt.Sprint(wait)}}
		if country != "" {
			q.Set("country", country)
		}
		var u usage.BalanceUpdate
		e.mustStatus(e.node("GET", internalapi.PathBalances+"?"+q.Encode(), ""), 200).json(t, &u)
		return u
	}
	ids := func(u usage.BalanceUpdate) []string {
		var out []string
		for _, b := range u.Balances {
			out = append(out, b.AccountID)
		}
		slices.Sort(out)
		return out
	}
	want := func(res ...string) []string {
		var out []string
		for _, r := range res {
			out = append(out, acct[r])
		}
		slices.Sort(out)
		return out
	}
	all := seen("", 0, 0)
	for _, tc := range []struct {
		country string
		res     []string
	}{{"", []string{"se", "eu", "any"}}, {"SE", []string{"se", "eu", "any"}}, {"DE", []string{"eu", "any"}}, {"US", []string{"any"}}} {
		u := seen(tc.country, 0, 0)
		if got := ids(u); !slices.Equal(got, want(tc.res...)) || u.Seq != all.Seq {
			t.Errorf("node in %q: balances of %v at seq %d; want %v at %d", tc.country, got, u.Seq, want(tc.res...), all.Seq)
		}
	}
	// A top-up of the se account: a US watcher waits it out and hears nothing, but its
	// cursor moves past it; a Swedish watcher hears it.
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+acct["se"]+"/credits", map[string]string{"amount_sek": "1"}), 200)
	start := time.Now()
	us := seen("US", all.Seq, 1)
	if len(us.Balances) != 0 || us.Seq <= all.Seq || time.Since(start) < 900*time.Millisecond {
		t.Fatalf("US watch after an se top-up: %+v after %v", us, time.Since(start))
	}
	if se := seen("SE", all.Seq, 1); !slices.Equal(ids(se), want("se")) || se.Seq != us.Seq {
		t.Fatalf("SE watch after an se top-up: %+v", se)
	}
	for _, bad := range []string{"se", "SWE", "EU", "1A"} {
		r := e.node("GET", internalapi.PathBalances+"?"+url.Values{"country": {bad}}.Encode(), "")
		if _, _, param := r.errInfo(t); r.status != 400 || param != "country" {
			t.Errorf("country %q: %d param %q", bad, r.status, param)
		}
	}
}

// TestNodeSpoolAgeListed: the spool age a node states with its snapshot polls, balance
// polls and usage batches is listed with the node; a poll without it keeps the last one.
func TestNodeSpoolAgeListed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	type node struct {
		NodeID          string     `json:"node_id"`
		SpoolAgeMs      int64      `json:"spool_age_ms"`
		SpoolReportedAt *time.Time `json:"spool_reported_at"`
	}
	list := func() []node {
		var l struct{ Data []node }
		e.mustStatus(e.admin("GET", "/admin/v1/nodes", nil), 200).json(t, &l)
		return l.Data
	}
	poll := func(age string) {
		h := map[string]string{internalapi.HeaderNodeID: "node-1"}
		if age != "" {
			h[internalapi.HeaderSpoolAge] = age
		}
		// The snapshot may not be compiled yet (503): the poll is recorded either way.
		e.do("GET", internalapi.PathSnapshot+"?wait=0", nodeToken, nil, h)
	}
	poll("")
	if l := list(); len(l) != 1 || l[0].SpoolAgeMs != 0 || l[0].SpoolReportedAt != nil {
		t.Fatalf("node that never reported: %+v", l)
	}
	poll("2500")
	l := list()
	if len(l) != 1 || l[0].SpoolAgeMs != 2500 || l[0].SpoolReportedAt == nil {
		t.Fatalf("after a poll stating 2500 ms: %+v", l)
	}
	poll("")
	poll("not-a-number")
	if l := list(); l[0].SpoolAgeMs != 2500 {
		t.Fatalf("a poll without a usable age changed it: %+v", l)
	}
	// A balance poll states it too.
	e.mustStatus(e.do("GET", internalapi.PathBalances+"?since=0", nodeToken, nil,
		map[string]string{internalapi.HeaderNodeID: "node-1", internalapi.HeaderSpoolAge: "0"}), 200)
	if l := list(); l[0].SpoolAgeMs != 0 {
		t.Fatalf("after a balance poll stating 0: %+v", l)
	}
}
