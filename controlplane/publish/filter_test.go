package publish

import (
	"slices"
	"strings"
	"testing"

	"github.com/sekgate/gateway/shared/residency"
	"github.com/sekgate/gateway/shared/snapshot"
)

func filterFixture() *snapshot.Snapshot {
	s := &snapshot.Snapshot{Version: 7, Content: snapshot.Content{
		Accounts: []snapshot.Account{
			{ID: "a-se", Residency: residency.SE, Models: []string{"m", "m2"}},
			{ID: "a-eu", Residency: residency.EU, Models: []string{"m", "m2"}},
			{ID: "a-any", Residency: residency.Any, Models: []string{"m"}},
		},
		Keys:   []snapshot.Key{{ID: "k1", AccountID: "a-se", Hash: strings.Repeat("1", 64)}, {ID: "k2", AccountID: "a-eu", Hash: strings.Repeat("2", 64)}, {ID: "k3", AccountID: "a-any", Hash: strings.Repeat("3", 64)}},
		Models: []snapshot.Model{{ID: "m"}, {ID: "m2"}},
		Routes: []snapshot.Route{{ID: "r-se", Model: "m", Country: "SE"}, {ID: "r-de", Model: "m", Country: "DE"}, {ID: "r-us", Model: "m", Country: "US"},
			{ID: "r2-de", Model: "m2", Country: "DE"}, {ID: "r2-us", Model: "m2", Country: "US"}},
		Balances: []snapshot.Balance{{AccountID: "a-se", MicroSEK: 1}, {AccountID: "a-eu", MicroSEK: 2}, {AccountID: "a-any", MicroSEK: 3}},
	}}
	s.Hash, _ = snapshot.ComputeHash(&s.Content)
	return s
}

// FuzzFilterCountry: whatever a node states as its country, what residency.ValidCountry admits is
// empty or two upper-case letters, and the filtered snapshot holds only accounts (with
// their keys and balances) whose policy admits it, routes one of them may use, and a hash
// that verifies; the input is left as it was.
func FuzzFilterCountry(f *testing.F) {
	for _, c := range []string{"", "SE", "DE", "US", "se", "SWE", "\x00\x00"} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, country string) {
		if !residency.ValidCountry(country) {
			return
		}
		if country != "" && (len(country) != 2 || country[0] < 'A' || country[0] > 'Z' || country[1] < 'A' || country[1] > 'Z') {
			t.Fatalf("ValidCountry(%q)", country)
		}
		in := filterFixture()
		want := in.Hash
		out, err := Filter(in, country)
		if err != nil {
			t.Fatal(err)
		}
		if h, _ := snapshot.ComputeHash(&in.Content); h != want {
			t.Fatal("Filter modified its input")
		}
		if out.Country != country || out.Verify() != nil || out.Signature != "" {
			t.Fatalf("filtered snapshot: country %q, verify %v", out.Country, out.Verify())
		}
		kept := map[string]string{}
		for _, a := range out.Accounts {
			if !residency.Satisfies(a.Residency, country) {
				t.Fatalf("account %s (%s) kept for %q", a.ID, a.Residency, country)
			}
			kept[a.ID] = a.Residency
		}
		for _, k := range out.Keys {
			if kept[k.AccountID] == "" {
				t.Fatalf("key %s kept for %q", k.ID, country)
			}
		}
		for _, k := range out.Elsewhere {
			if residency.Satisfies(k.Residency, country) || len(k.HashPrefix) != 8 {
				t.Fatalf("elsewhere key %+v for %q", k, country)
			}
		}
		if len(out.Keys)+len(out.Elsewhere) != len(in.Keys) {
			t.Fatalf("for %q: %d keys and %d elsewhere of %d", country, len(out.Keys), len(out.Elsewhere), len(in.Keys))
		}
		for _, b := range out.Balances {
			if kept[b.AccountID] == "" {
				t.Fatalf("balance of %s kept for %q", b.AccountID, country)
			}
		}
		for _, r := range out.Routes {
			ok := false
			for _, p := range kept {
				ok = ok || residency.Satisfies(p, r.Country)
			}
			if !ok {
				t.Fatalf("route %s kept for %q", r.ID, country)
			}
		}
		if len(out.Keys) != len(out.Accounts) || len(out.Balances) != len(out.Accounts) || len(out.Models) != 2 {
			t.Fatalf("for %q: %d accounts, %d keys, %d balances, %d models", country, len(out.Accounts), len(out.Keys), len(out.Balances), len(out.Models))
		}
	})
}

func TestFilterByCountry(t *testing.T) {
	for _, tc := range []struct {
		country          string
		accounts, routes []string
	}{
		// m2 is used by the se and eu accounts only: its US route never, its DE route only
		// where the eu account is kept.
		{"SE", []string{"a-se", "a-eu", "a-any"}, []string{"r-se", "r-de", "r-us", "r2-de"}},
		{"DE", []string{"a-eu", "a-any"}, []string{"r-se", "r-de", "r-us", "r2-de"}},
		{"US", []string{"a-any"}, []string{"r-se", "r-de", "r-us"}},
	} {
		out, err := Filter(filterFixture(), tc.country)
		if err != nil {
			t.Fatal(err)
		}
		var accts, routes []string
		for _, a := range out.Accounts {
			accts = append(accts, a.ID)
		}
		for _, r := range out.Routes {
			routes = append(routes, r.ID)
		}
		if !slices.Equal(accts, tc.accounts) || !slices.Equal(routes, tc.routes) {
			t.Fatalf("%s: accounts %v (want %v), routes %v (want %v)", tc.country, accts, tc.accounts, routes, tc.routes)
		}
	}
}
