package server

import (
	"encoding/json"
	"testing"
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
