package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sekgate/gateway/controlplane/catalog"
	"github.com/sekgate/gateway/controlplane/store"
)

const editCatalogue = `models:
  - id: meta/llama
    endpoint: /v1/chat/completions
    input_ore_per_million_tokens: 150
    output_ore_per_million_tokens: 300
    routes:
      - id: llama-se
        provider: vllm
        base_url: http://127.0.0.1:8090/v1
        region: se-sto-1
        country: SE
        weight: 1
`

// The catalogue page has a price form per model for admins and a weight and state form
// per route for operators; each change is made through the admin API (audited) and a bad
// value is refused and changes nothing.
func TestConsoleCatalogueEdits(t *testing.T) {
	srv, st := newConsole(t)
	ctx := context.Background()
	c, err := catalog.ParseYAML([]byte(editCatalogue))
	if err == nil {
		err = c.Validate()
	}
	if err == nil {
		_, _, err = st.UpsertCatalog(ctx, c)
	}
	if err != nil {
		t.Fatal(err)
	}
	page := srv.URL + "/console/catalogue"

	// An operator changes routes, not prices.
	op := browser(t)
	op.Jar = insecureJar{jar: op.Jar}
	csrf := login(t, srv, op)
	_, body := get(t, op, page)
	if strings.Contains(body, `action="/console/catalogue/prices"`) || !strings.Contains(body, `action="/console/catalogue/route"`) ||
		!strings.Contains(body, `<option selected>enabled</option><option >disabled</option><option >draining</option>`) {
		t.Fatalf("operator's catalogue page:\n%.6000s", body)
	}
	res, _ := post(t, op, srv.URL+"/console/catalogue/route", url.Values{"csrf": {csrf}, "route": {"llama-se"}, "weight": {"3"}, "state": {"draining"}})
	if loc, shown := followed(t, op, srv.URL, res); loc != "/console/catalogue" || !strings.Contains(shown, "Route llama-se: weight 3, draining.") ||
		!strings.Contains(shown, `<td class="state bad">draining</td>`) {
		t.Fatalf("after draining: %s\n%.6000s", loc, shown)
	}
	r, err := st.GetRoute(ctx, "llama-se")
	if err != nil || r.Weight != 3 || r.State != "draining" {
		t.Fatalf("stored route %+v %v", r, err)
	}
	for _, bad := range []url.Values{{"weight": {"0"}, "state": {"enabled"}}, {"weight": {"2"}, "state": {"paused"}}} {
		bad.Set("csrf", csrf)
		bad.Set("route", "llama-se")
		res, _ := post(t, op, srv.URL+"/console/catalogue/route", bad)
		if _, shown := followed(t, op, srv.URL, res); !strings.Contains(shown, "The weight must be a whole number of at least 1.") &&
			!strings.Contains(shown, "The state must be enabled, disabled or draining.") {
			t.Errorf("%v: no refusal shown:\n%.4000s", bad, shown)
		}
	}
	res, _ = post(t, op, srv.URL+"/console/catalogue/prices", url.Values{"csrf": {csrf}, "model": {"meta/llama"}, "input": {"1"}, "output": {"1"}})
	if _, shown := followed(t, op, srv.URL, res); !strings.Contains(shown, "This needs the admin role") {
		t.Errorf("an operator's price change was not refused:\n%.4000s", shown)
	}

	// An admin changes prices, of a model whose ID holds a slash.
	adm, acsrf := adminBrowser(t, srv.URL, func(c *http.Client) string { return loginAs(t, srv, c, "ada", "ada's long password") })
	_, body = get(t, adm, page)
	if !strings.Contains(body, `aria-label="input öre per million tokens of meta/llama"`) {
		t.Fatalf("admin's catalogue page without the price form:\n%.6000s", body)
	}
	res, _ = post(t, adm, srv.URL+"/console/catalogue/prices", url.Values{"csrf": {acsrf}, "model": {"meta/llama"}, "input": {"120"}, "output": {"0"}})
	if _, shown := followed(t, adm, srv.URL, res); !strings.Contains(shown, "Prices of meta/llama set to 120 öre (input) and 0 öre (output) per million tokens.") {
		t.Fatalf("after setting prices:\n%.6000s", shown)
	}
	res, _ = post(t, adm, srv.URL+"/console/catalogue/prices", url.Values{"csrf": {acsrf}, "model": {"meta/llama"}, "input": {"-5"}, "output": {"1"}})
	if _, shown := followed(t, adm, srv.URL, res); !strings.Contains(shown, "Prices must be whole numbers of öre per million tokens, 0 or more.") {
		t.Errorf("a negative price was not refused:\n%.4000s", shown)
	}
	m, err := st.GetModel(ctx, "meta/llama")
	if err != nil || m.InputOrePerMillion != 120 || m.OutputOrePerMillion != 0 {
		t.Fatalf("stored model %+v %v", m.Model, err)
	}
	for target, actor := range map[string]string{"meta/llama": "operator:ada", "llama-se": "operator:alice"} {
		es, err := st.ListAudit(ctx, store.AuditQuery{Target: target, Limit: 10})
		if err != nil || len(es) == 0 || es[0].Actor != actor || es[0].Status != 200 || len(es[0].Before) == 0 {
			t.Errorf("audit of %s: %+v %v", target, es, err)
		}
	}
}
