package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/snapshot"
)

// TestNodeCountryAdmission: a node that knows its country refuses accounts whose policy does
// not admit it (403 residency_unsatisfiable naming the region that serves them) before any
// routing, and serves the others.
func TestNodeCountryAdmission(t *testing.T) {
	urls := map[string]string{"se": "https://se.gateway.example", "eu": "https://eu.gateway.example"}
	cases := []struct {
		country    string
		seOK, euOK bool
	}{
		{"SE", true, true},
		{"DE", false, true},
		{"US", false, false},
		{"", true, true}, // no country: every account admitted
	}
	for _, c := range cases {
		t.Run("node in "+c.country, func(t *testing.T) {
			g := startGateway(t, func(cfg *Config) { cfg.Country, cfg.RegionURLs = c.country, urls })
			for _, k := range []struct {
				name, key string
				ok        bool
			}{{"se", g.Keys.SE, c.seOK}, {"eu", g.Keys.EU, c.euOK}} {
				r := g.do(t, "GET", "/v1/models", k.key, "")
				if k.ok {
					if r.Status != 200 {
						t.Errorf("%s account: %d %s", k.name, r.Status, r.Body)
					}
					continue
				}
				checkEnvelope(t, r, 403, "residency_unsatisfiable")
				var env struct {
					DocURL string `json:"documentation_url"`
				}
				_ = json.Unmarshal([]byte(r.Body), &env)
				if env.DocURL != urls[k.name] {
					t.Errorf("%s account: documentation_url %q, want %q", k.name, env.DocURL, urls[k.name])
				}
				before := g.Meter.Count()
				if r := g.do(t, "POST", "/v1/chat/completions", k.key, `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}]}`); r.Status != 403 {
					t.Errorf("%s account inference: %d %s", k.name, r.Status, r.Body)
				}
				if g.Meter.Count() != before {
					t.Errorf("%s account: a refused request reached routing (record written)", k.name)
				}
			}
		})
	}
	if _, err := New(Config{Store: startGateway(t).Store, Meter: startGateway(t).Meter, Country: "se"}); err == nil {
		t.Error("lower-case country accepted")
	}
}

// TestKeyServedElsewhere: a node holds only its country's keys; a key the snapshot lists as
// served elsewhere (ID, policy, hash prefix: no hash) gets 403 naming the region that serves
// it, but only for the holder of its secret: another secret under that key ID, or a prefix
// that does not match, is an invalid key.
func TestKeyServedElsewhere(t *testing.T) {
	urls := map[string]string{"se": "https://se.gateway.example"}
	g := startGateway(t, func(cfg *Config) { cfg.Country, cfg.RegionURLs = "US", urls })
	s := *g.Snap
	s.Keys = nil
	var seKey snapshot.Key
	for _, k := range g.Snap.Keys {
		if k.Hash == apikey.Hash(g.Keys.SE) {
			seKey = k
			continue
		}
		if k.Hash == apikey.Hash(g.Keys.EU) {
			// Listed with a prefix that is not its hash's.
			s.Elsewhere = append(s.Elsewhere, snapshot.ElsewhereKey{ID: k.ID, Residency: "eu", HashPrefix: "00000000"})
			continue
		}
		s.Keys = append(s.Keys, k)
	}
	if seKey.ID == "" {
		t.Fatal("fixture has no se key")
	}
	s.Elsewhere = append(s.Elsewhere, snapshot.ElsewhereKey{ID: seKey.ID, Residency: "se", HashPrefix: seKey.Hash[:8]})
	x, err := index.Build(&s)
	if err != nil {
		t.Fatal(err)
	}
	g.Store.Swap(x)

	r := g.do(t, "GET", "/v1/models", g.Keys.SE, "")
	checkEnvelope(t, r, 403, "residency_unsatisfiable")
	var env struct {
		DocURL string `json:"documentation_url"`
	}
	if json.Unmarshal([]byte(r.Body), &env); env.DocURL != urls["se"] {
		t.Fatalf("documentation_url %q", env.DocURL)
	}
	before := g.Meter.Count()
	if r := g.do(t, "POST", "/v1/chat/completions", g.Keys.SE, `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}]}`); r.Status != 403 {
		t.Fatalf("inference: %d %s", r.Status, r.Body)
	}
	if g.Meter.Count() != before {
		t.Fatal("a request of a key served elsewhere was recorded")
	}
	// Another secret under the se key's ID: not its holder.
	forged := g.Keys.SE[:len(g.Keys.SE)-4] + "0000"
	if forged == g.Keys.SE {
		forged = g.Keys.SE[:len(g.Keys.SE)-4] + "1111"
	}
	checkEnvelope(t, g.do(t, "GET", "/v1/models", forged, ""), 401, "invalid_api_key")
	checkEnvelope(t, g.do(t, "GET", "/v1/models", g.Keys.EU, ""), 401, "invalid_api_key")

	// A listed key that is also a key of the snapshot is a malformed snapshot.
	bad := s
	bad.Elsewhere = append([]snapshot.ElsewhereKey{{ID: s.Keys[0].ID, Residency: "se", HashPrefix: s.Keys[0].Hash[:8]}}, s.Elsewhere...)
	if _, err := index.Build(&bad); err == nil {
		t.Fatal("elsewhere key duplicating a key accepted")
	}
}

// TestNodeRegionRecorded: a node's region name is recorded in every request's routing; a
// node without one records none; malformed names are refused at start.
func TestNodeRegionRecorded(t *testing.T) {
	for _, region := range []string{"se-sto", ""} {
		g := startGateway(t, func(cfg *Config) { cfg.Region = region })
		if r := g.do(t, "POST", "/v1/chat/completions", g.Keys.SE, `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}]}`); r.Status != 200 {
			t.Fatalf("region %q: %d %s", region, r.Status, r.Body)
		}
		recs := waitRecords(t, g, 1)
		if recs[0].Routing == nil || recs[0].Routing.NodeRegion != region {
			t.Fatalf("region %q: record routing %+v", region, recs[0].Routing)
		}
		b := recs[0].AppendJSON(nil)
		if has := strings.Contains(string(b), `"node_region":"se-sto"`); has != (region != "") {
			t.Fatalf("region %q: record JSON %s", region, b)
		}
	}
	g := startGateway(t)
	if _, err := New(Config{Store: g.Store, Meter: g.Meter, Region: "eu-fra-1"}); err != nil {
		t.Fatalf("good region refused: %v", err)
	}
	for _, bad := range []string{"SE-STO", "se sto", "-se", "se-", strings.Repeat("a", 64), "sé"} {
		if _, err := New(Config{Store: g.Store, Meter: g.Meter, Region: bad}); err == nil {
			t.Errorf("region %q accepted", bad)
		}
	}
}

// TestRegionURLsFromSnapshot: the base URL a refusal names comes from the snapshot (the
// control plane's --region-urls) and changes with it; the node's own entry for a policy
// overrides the snapshot's; without either the refusal names no URL.
func TestRegionURLsFromSnapshot(t *testing.T) {
	docURL := func(r result) (string, string) {
		t.Helper()
		checkEnvelope(t, r, 403, "residency_unsatisfiable")
		var env struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
			DocURL string `json:"documentation_url"`
		}
		_ = json.Unmarshal([]byte(r.Body), &env)
		return env.DocURL, env.Error.Message
	}
	g := startGateway(t, func(cfg *Config) { cfg.Country = "US" })
	if u, msg := docURL(g.do(t, "GET", "/v1/models", g.Keys.SE, "")); u != "" || strings.Contains(msg, "send its requests") {
		t.Fatalf("no URLs anywhere: documentation_url %q, message %q", u, msg)
	}
	install := func(urls map[string]string) {
		t.Helper()
		s := *g.Snap
		s.RegionURLs = urls
		s.Version++
		x, err := index.Build(&s)
		if err != nil {
			t.Fatal(err)
		}
		g.Store.Swap(x)
	}
	install(map[string]string{"se": "https://se.gateway.example", "eu": "https://eu.gateway.example"})
	for key, want := range map[string]string{g.Keys.SE: "https://se.gateway.example", g.Keys.EU: "https://eu.gateway.example"} {
		u, msg := docURL(g.do(t, "GET", "/v1/models", key, ""))
		if u != want || !strings.HasSuffix(msg, "; send its requests to "+want) {
			t.Errorf("from the snapshot: documentation_url %q, message %q; want %s", u, msg, want)
		}
	}
	install(map[string]string{"se": "https://sweden.gateway.example"})
	if u, _ := docURL(g.do(t, "GET", "/v1/models", g.Keys.SE, "")); u != "https://sweden.gateway.example" {
		t.Errorf("after a new snapshot: %q", u)
	}

	o := startGateway(t, func(cfg *Config) {
		cfg.Country, cfg.RegionURLs = "US", map[string]string{"se": "https://se.override.example"}
	})
	g = o
	install(map[string]string{"se": "https://se.gateway.example", "eu": "https://eu.gateway.example"})
	if u, _ := docURL(o.do(t, "GET", "/v1/models", o.Keys.SE, "")); u != "https://se.override.example" {
		t.Errorf("the node's own se entry: %q", u)
	}
	if u, _ := docURL(o.do(t, "GET", "/v1/models", o.Keys.EU, "")); u != "https://eu.gateway.example" {
		t.Errorf("eu, no override: %q", u)
	}

	bad := *g.Snap
	bad.RegionURLs = map[string]string{"mars": "https://x.example"}
	if _, err := index.Build(&bad); err == nil {
		t.Error("a snapshot with a region URL for an unknown policy was indexed")
	}
}
