package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/sekgate/gateway/shared/snapshot"
)

const validJSON = `{"models":[{"id":"llama-3.1-8b","aliases":["llama","meta/llama"],"endpoint":"/v1/chat/completions",
 "created":1700000000,"context_tokens":8192,"tokenizer":"llama3","input_ore_per_million_tokens":150,"output_ore_per_million_tokens":300,
 "routes":[{"id":"r1","provider":"vllm","base_url":"http://127.0.0.1:8090/v1","protocols":["/v1/chat/completions"],
  "region":"se-sto-1","country":"SE","priority":0,"weight":1}]}]}`

const validYAML = `
models:
  - id: llama-3.1-8b
    aliases: [llama, meta/llama]
    endpoint: /v1/chat/completions
    created: 1700000000
    context_tokens: 8192
    tokenizer: llama3
    input_ore_per_million_tokens: 150
    output_ore_per_million_tokens: 300
    cache_isolation: shared
    routes:
      - id: r1
        provider: vllm
        base_url: http://127.0.0.1:8090/v1
        protocols: [/v1/chat/completions]
        region: se-sto-1
        country: SE
        priority: 0
        weight: 1
        allow_remote_media: true
        allow_extensions: [prompt_embeds, image_embeds]
      - id: r2
        provider: vllm
        base_url: http://vllm.llm.svc.cluster.local:8000/v1
        discovery: dns
        region: se-sto-1
        country: SE
        weight: 1
`

func TestDecodeAndValidate(t *testing.T) {
	j, err := DecodeJSON(strings.NewReader(validJSON))
	if err != nil {
		t.Fatal(err)
	}
	y, err := ParseYAML([]byte(validYAML))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Catalog{j, y} {
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		r := c.Models[0].Routes[0]
		if r.Model != "llama-3.1-8b" || r.Country != "SE" || c.Models[0].InputOrePerMillion != 150 {
			t.Fatalf("decoded %+v", c.Models[0])
		}
	}
	// The media and extension opt-ins are read from the YAML catalogue; off when absent.
	if r := y.Models[0].Routes[0]; !r.AllowRemoteMedia || len(r.AllowExtensions) != 2 || r.AllowExtensions[1] != "image_embeds" {
		t.Fatalf("opt-ins not read from YAML: %+v", r)
	}
	if r := j.Models[0].Routes[0]; r.AllowRemoteMedia || r.AllowExtensions != nil {
		t.Fatalf("opt-ins on by default: %+v", r)
	}
	if d := y.Models[0].Routes[1].Discovery; d != snapshot.DiscoveryDNS {
		t.Fatalf("discovery not read from YAML: %q", d)
	}
	// cache_isolation is read from the YAML catalogue; absent, it stays empty (account).
	if y.Models[0].CacheIsolation != "shared" || !y.Models[0].SharesCache() {
		t.Fatalf("cache_isolation not read from YAML: %q", y.Models[0].CacheIsolation)
	}
	if m := j.Models[0]; m.CacheIsolation != "" || m.SharesCache() {
		t.Fatalf("cache isolation by default %q, shares %v", m.CacheIsolation, m.SharesCache())
	}
}

func TestCacheIsolationValues(t *testing.T) {
	for _, v := range []string{"", "account", "shared"} {
		c, _ := DecodeJSON(strings.NewReader(validJSON))
		c.Models[0].CacheIsolation = v
		if err := c.Validate(); err != nil {
			t.Errorf("cache_isolation %q: %v", v, err)
		}
		if got, want := c.Models[0].SharesCache(), v == "shared"; got != want {
			t.Errorf("cache_isolation %q: shares %v, want %v", v, got, want)
		}
	}
}

func TestOutputBytesPerTokenValues(t *testing.T) {
	for _, c := range []struct {
		v  int
		ok bool
	}{{0, true}, {2, true}, {8, true}, {32, true}, {1, false}, {33, false}, {-4, false}} {
		cat, _ := DecodeJSON(strings.NewReader(validJSON))
		cat.Models[0].OutputBytesPerToken = c.v
		if err := cat.Validate(); (err == nil) != c.ok {
			t.Errorf("output_bytes_per_token %d: %v, want ok %v", c.v, err, c.ok)
		}
	}
	y, err := ParseYAML([]byte(strings.Replace(validYAML, "cache_isolation: shared", "cache_isolation: shared\n    output_bytes_per_token: 4", 1)))
	if err != nil || y.Models[0].OutputBytesPerToken != 4 {
		t.Fatalf("output_bytes_per_token not read from YAML: %v %+v", err, y)
	}
}

func TestValidateRules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(c *Catalog)
		param string
	}{
		{"empty id", func(c *Catalog) { c.Models[0].ID = "" }, "models[0].id"},
		{"id with space", func(c *Catalog) { c.Models[0].ID = "a b" }, "models[0].id"},
		{"unknown endpoint", func(c *Catalog) { c.Models[0].Endpoint = "/v1/images" }, "models[0].endpoint"},
		{"duplicate alias", func(c *Catalog) { c.Models[0].Aliases = []string{"x", "x"} }, "models[0].aliases[1]"},
		{"alias equals own id", func(c *Catalog) { c.Models[0].Aliases = []string{"llama-3.1-8b"} }, "models[0].aliases[0]"},
		{"negative context", func(c *Catalog) { c.Models[0].ContextTokens = -1 }, "models[0].context_tokens"},
		{"negative output price", func(c *Catalog) { c.Models[0].OutputOrePerMillion = -1 }, "models[0].output_ore_per_million_tokens"},
		{"no provider", func(c *Catalog) { c.Models[0].Routes[0].Provider = " " }, "models[0].routes[0].provider"},
		{"relative base url", func(c *Catalog) { c.Models[0].Routes[0].BaseURL = "/v1" }, "models[0].routes[0].base_url"},
		{"lower-case country", func(c *Catalog) { c.Models[0].Routes[0].Country = "se" }, "models[0].routes[0].country"},
		{"empty country", func(c *Catalog) { c.Models[0].Routes[0].Country = "" }, "models[0].routes[0].country"},
		{"no region", func(c *Catalog) { c.Models[0].Routes[0].Region = "" }, "models[0].routes[0].region"},
		{"zero weight", func(c *Catalog) { c.Models[0].Routes[0].Weight = 0 }, "models[0].routes[0].weight"},
		{"negative weight", func(c *Catalog) { c.Models[0].Routes[0].Weight = -2 }, "models[0].routes[0].weight"},
		{"duplicate protocol", func(c *Catalog) {
			c.Models[0].Routes[0].Protocols = []string{"/v1/chat/completions", "/v1/chat/completions"}
		}, "models[0].routes[0].protocols[1]"},
		{"route of another model", func(c *Catalog) { c.Models[0].Routes[0].Model = "other" }, "models[0].routes[0].model"},
		{"duplicate route id", func(c *Catalog) { c.Models[0].Routes = append(c.Models[0].Routes, c.Models[0].Routes[0]) }, "models[0].routes[1].id"},
		{"negative timeout", func(c *Catalog) { c.Models[0].Routes[0].TotalTimeoutMS = -1 }, "models[0].routes[0].total_timeout_ms"},
		{"unknown extension", func(c *Catalog) {
			c.Models[0].Routes[0].AllowExtensions = []string{"prompt_embeds", "guided_json"}
		}, "models[0].routes[0].allow_extensions[1]"},
		{"duplicate extension", func(c *Catalog) {
			c.Models[0].Routes[0].AllowExtensions = []string{"chat_template", "chat_template"}
		}, "models[0].routes[0].allow_extensions[1]"},
		{"unknown routing", func(c *Catalog) { c.Models[0].Routing = "round_robin" }, "models[0].routing"},
		{"unknown cache isolation", func(c *Catalog) { c.Models[0].CacheIsolation = "tenant" }, "models[0].cache_isolation"},
		{"cache isolation in upper case", func(c *Catalog) { c.Models[0].CacheIsolation = "Shared" }, "models[0].cache_isolation"},
		{"metrics_url not http", func(c *Catalog) { c.Models[0].Routes[0].MetricsURL = "ftp://h/metrics" }, "models[0].routes[0].metrics_url"},
		{"metrics_url with userinfo", func(c *Catalog) { c.Models[0].Routes[0].MetricsURL = "http://u:p@h/metrics" }, "models[0].routes[0].metrics_url"},
	} {
		c, _ := DecodeJSON(strings.NewReader(validJSON))
		tc.edit(c)
		err := c.Validate()
		var ce *Error
		if !errors.As(err, &ce) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if ce.Param != tc.param {
			t.Errorf("%s: param %q, want %q", tc.name, ce.Param, tc.param)
		}
	}
	// Defaults: protocols default to the model's endpoint.
	c, _ := DecodeJSON(strings.NewReader(validJSON))
	c.Models[0].Routes[0].Protocols = nil
	if err := c.Validate(); err != nil || len(c.Models[0].Routes[0].Protocols) != 1 {
		t.Fatalf("default protocols: %v %v", err, c.Models[0].Routes[0].Protocols)
	}
	for _, bad := range []string{`{"models":[{"id":"x","endpoint":"/v1/chat/completions","nope":1}]}`, `{"models":[]} {}`, `[`} {
		if _, err := DecodeJSON(strings.NewReader(bad)); err == nil {
			t.Errorf("decoded %s", bad)
		}
	}
}

func FuzzCatalog(f *testing.F) {
	f.Add([]byte(validJSON))
	f.Add([]byte(validYAML))
	f.Add([]byte(`{"models":[{"id":"a","aliases":["a"]}]}`))
	f.Add([]byte("models: [{id: x, routes: [{weight: -1}]}]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, parse := range []func([]byte) (*Catalog, error){
			func(b []byte) (*Catalog, error) { return DecodeJSON(strings.NewReader(string(b))) },
			ParseYAML,
		} {
			c, err := parse(b)
			if err != nil {
				continue
			}
			if err := c.Validate(); err != nil {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("validation error not wrapping ErrInvalid: %v", err)
				}
				continue
			}
			for _, m := range c.Models {
				for _, r := range m.Routes {
					if r.Weight <= 0 || r.Model != m.ID || len(r.Protocols) == 0 {
						t.Fatalf("valid catalogue with bad route %+v", r)
					}
				}
			}
		}
	})
}
