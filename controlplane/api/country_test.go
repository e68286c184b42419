package api_test

import (
	"crypto/ed25519"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

// pollCountry polls for the snapshot built for country (empty: unfiltered) and checks its
// hash and signature.
func (e *env) pollCountry(q url.Values) (resp, *snapshot.Snapshot) {
	e.t.Helper()
	r := e.node("GET", internalapi.PathSnapshot+"?"+q.Encode(), "")
	if r.status != 200 {
		return r, nil
	}
	var s snapshot.Snapshot
	r.json(e.t, &s)
	if err := s.VerifySigned(signingKey.Public().(ed25519.PublicKey)); err != nil {
		e.t.Fatalf("served snapshot (country %q) does not verify: %v", q.Get("country"), err)
	}
	return r, &s
}

func TestSnapshotFilteredByCountry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200)
	// se uses both models, eu the embedding model (routed in DE), any the chat model
	// (routed in SE only).
	grants := map[string][]string{"se": {"llama-3.1-8b", "nomic-embed"}, "eu": {"nomic-embed"}, "any": {"llama-3.1-8b"}}
	acct, keyHash := map[string]string{}, map[string]string{}
	for _, res := range []string{"se", "eu", "any"} {
		acct[res] = e.createAccount("Customer "+res, res)
		e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+acct[res]+"/models", map[string]any{"models": grants[res], "allow_outside_residency": true}), 200)
		var k struct{ Secret string }
		e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+acct[res]+"/keys", map[string]any{"name": "k"}), 201).json(t, &k)
		keyHash[res] = apikey.Hash(k.Secret)
	}
	// Wait for the snapshot holding all three keys.
	var full *snapshot.Snapshot
	if !poll.Wait(10*time.Second, func() bool {
		_, full = e.pollCountry(url.Values{"have": {"0"}})
		return full != nil && len(full.Keys) == 3 && full.Country == ""
	}) {
		t.Fatalf("unfiltered snapshot never held the three keys: %+v", full)
	}
	for _, tc := range []struct {
		country  string
		accounts []string // residencies kept
		routes   []string
	}{
		{"US", []string{"any"}, []string{"llama-se"}},
		{"DE", []string{"eu", "any"}, []string{"embed-de", "llama-se"}},
		{"SE", []string{"se", "eu", "any"}, []string{"embed-de", "llama-se"}},
	} {
		t.Run(tc.country, func(t *testing.T) {
			r, s := e.pollCountry(url.Values{"have": {"0"}, "country": {tc.country}})
			if s == nil {
				t.Fatalf("poll: %d %s", r.status, r.body)
			}
			if s.Country != tc.country || s.Version != full.Version || !s.IssuedAt.Equal(full.IssuedAt) {
				t.Fatalf("snapshot for %s states country %q, version %d (want %d)", tc.country, s.Country, s.Version, full.Version)
			}
			want := map[string]bool{}
			for _, res := range tc.accounts {
				want[acct[res]] = true
			}
			var gotAccts, gotRoutes []string
			for _, a := range s.Accounts {
				gotAccts = append(gotAccts, a.ID)
			}
			for _, rt := range s.Routes {
				gotRoutes = append(gotRoutes, rt.ID)
			}
			slices.Sort(gotRoutes)
			if len(gotAccts) != len(want) || !slices.Equal(gotRoutes, tc.routes) {
				t.Fatalf("accounts %v (want %v), routes %v (want %v)", gotAccts, tc.accounts, gotRoutes, tc.routes)
			}
			for _, id := range gotAccts {
				if !want[id] {
					t.Fatalf("account %s served to a node in %s", id, tc.country)
				}
			}
			for _, k := range s.Keys {
				if !want[k.AccountID] {
					t.Fatalf("key %s of account %s served to a node in %s", k.ID, k.AccountID, tc.country)
				}
			}
			for _, b := range s.Balances {
				if !want[b.AccountID] {
					t.Fatalf("balance of account %s served to a node in %s", b.AccountID, tc.country)
				}
			}
			for _, res := range tc.accounts {
				if !slices.ContainsFunc(s.Keys, func(k snapshot.Key) bool { return k.Hash == keyHash[res] }) {
					t.Fatalf("key of the %s account missing at %s", res, tc.country)
				}
			}
			if tc.country == "US" && slices.ContainsFunc(s.Keys, func(k snapshot.Key) bool { return k.Hash == keyHash["se"] }) {
				t.Fatal("a US node holds the key hash of an se account")
			}
			// The other accounts' keys are listed by ID, policy and hash prefix only.
			if len(s.Elsewhere) != 3-len(tc.accounts) {
				t.Fatalf("elsewhere %+v, want %d keys", s.Elsewhere, 3-len(tc.accounts))
			}
			for _, k := range s.Elsewhere {
				if len(k.HashPrefix) != 8 || keyHash[k.Residency][:8] != k.HashPrefix || slices.Contains(tc.accounts, k.Residency) {
					t.Fatalf("elsewhere key %+v at %s", k, tc.country)
				}
			}
			if len(s.Models) != len(full.Models) {
				t.Fatalf("models %d, want the whole catalogue %d", len(s.Models), len(full.Models))
			}
			// The variant is cached: the same bytes again, and a node holding it is current.
			r2, _ := e.pollCountry(url.Values{"have": {"0"}, "country": {tc.country}})
			if string(r2.body) != string(r.body) {
				t.Fatal("a second poll built a different variant")
			}
			sh, _ := snapshot.StructureHash(&s.Content)
			held := url.Values{"have": {fmt.Sprint(s.Version)}, "hash": {sh}, "issued": {fmt.Sprint(s.IssuedAt.UnixNano())}, "wait": {"0"}}
			held.Set("country", tc.country)
			if r3, _ := e.pollCountry(held); r3.status != 304 {
				t.Fatalf("node holding the %s variant: %d, want 304", tc.country, r3.status)
			}
			// The same holding without a country is outdated by the unfiltered snapshot.
			held.Del("country")
			if r4, s4 := e.pollCountry(held); r4.status != 200 || s4.Country != "" {
				t.Fatalf("node without a country holding the %s variant: %d", tc.country, r4.status)
			}
		})
	}
	// A node's reported region is listed with it; a malformed one is refused.
	e.mustStatus(e.node("GET", internalapi.PathSnapshot+"?have=1&wait=0&region=us-any&country=US", ""), 200)
	var nodes struct {
		Data []struct {
			NodeID string `json:"node_id"`
			Region string `json:"region"`
		} `json:"data"`
	}
	e.mustStatus(e.admin("GET", "/admin/v1/nodes", nil), 200).json(t, &nodes)
	if len(nodes.Data) != 1 || nodes.Data[0].Region != "us-any" {
		t.Fatalf("nodes: %+v", nodes.Data)
	}
	for _, bad := range []string{"US-ANY", "us any", "-us", strings.Repeat("a", 64)} {
		r := e.node("GET", internalapi.PathSnapshot+"?"+url.Values{"region": {bad}}.Encode(), "")
		if _, _, param := r.errInfo(t); r.status != 400 || param != "region" {
			t.Fatalf("region %q: %d param %q", bad, r.status, param)
		}
	}
	for _, bad := range []string{"us", "USA", "U", "1A"} {
		r := e.node("GET", internalapi.PathSnapshot+"?"+url.Values{"country": {bad}}.Encode(), "")
		if _, _, param := r.errInfo(t); r.status != 400 || param != "country" {
			t.Fatalf("country %q: %d param %q", bad, r.status, param)
		}
	}
}
