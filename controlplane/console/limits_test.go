package console_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/sekgate/gateway/controlplane/catalog"
	"github.com/sekgate/gateway/controlplane/store"
)

// The account page shows the account's and each key's effective limits with their source,
// and sets and clears them through the admin API (audited); bad numbers change nothing.
func TestConsoleLimits(t *testing.T) {
	srv, st := newConsole(t)
	ctx := context.Background()
	a, err := st.CreateAccount(ctx, "Limited AB", "se")
	if err != nil {
		t.Fatal(err)
	}
	k, _, err := st.CreateKey(ctx, a.ID, "ci", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := browser(t)
	c.Jar = insecureJar{jar: c.Jar}
	csrf := login(t, srv, c)
	page := srv.URL + "/console/accounts/" + a.ID
	keyRow := func(body string) string {
		t.Helper()
		i := strings.Index(body, `<tr id="key-`+k.ID+`">`)
		if i < 0 {
			t.Fatalf("no row of key %s:\n%.4000s", k.ID, body)
		}
		row := body[i:]
		return row[:strings.Index(row, "</tr>")]
	}
	_, body := get(t, c, page)
	if !strings.Contains(body, `id="limits">unlimited</div><div class="muted" id="limits-source">deployment default</div>`) ||
		!strings.Contains(keyRow(body), `<span class="effective">unlimited</span> <span class="muted source">(deployment default)</span>`) {
		t.Fatalf("defaults not shown:\n%.6000s", body)
	}

	steps := []struct {
		name, path string
		form       url.Values
		notice     string
		acct, key  string // effective limits and source shown after the step
	}{
		{"account limits", "/console/accounts/" + a.ID + "/limits", url.Values{"requests_per_second": {"10"}, "burst": {"20"}, "max_concurrent": {""}},
			"Limits of the account set: 10 rps, burst 20.", "10 rps, burst 20</div><div class=\"muted\" id=\"limits-source\">the account's", "10 rps, burst 20</span> <span class=\"muted source\">(the account's)"},
		{"key limits", "/console/keys/" + k.ID + "/limits", url.Values{"account": {a.ID}, "requests_per_second": {"2,5"}, "max_concurrent": {"3"}},
			"Limits of key " + k.ID + " set: 2.5 rps, 3 in flight.", "10 rps, burst 20</div>", "2.5 rps, 3 in flight</span> <span class=\"muted source\">(the key's own)"},
		{"key cleared", "/console/keys/" + k.ID + "/limits", url.Values{"account": {a.ID}, "clear": {"1"}, "requests_per_second": {"7"}},
			"Limits of key " + k.ID + " cleared.", "10 rps, burst 20</div>", "10 rps, burst 20</span> <span class=\"muted source\">(the account's)"},
		{"account cleared", "/console/accounts/" + a.ID + "/limits", url.Values{"clear": {"1"}},
			"Limits of the account cleared.", "unlimited</div><div class=\"muted\" id=\"limits-source\">deployment default", "unlimited</span> <span class=\"muted source\">(deployment default)"},
	}
	for _, s := range steps {
		s.form.Set("csrf", csrf)
		res, _ := post(t, c, srv.URL+s.path, s.form)
		loc, shown := followed(t, c, srv.URL, res)
		if loc != "/console/accounts/"+a.ID || !strings.Contains(shown, s.notice) || !strings.Contains(shown, s.acct) || !strings.Contains(keyRow(shown), s.key) {
			t.Fatalf("%s: at %s, want %q, %q and key %q:\n%.8000s", s.name, loc, s.notice, s.acct, s.key, shown)
		}
	}
	audit, err := st.ListAudit(ctx, store.AuditQuery{Target: k.ID, Limit: 10})
	if err != nil || len(audit) != 2 || audit[0].Action != "PATCH /admin/v1/keys/{id}" || audit[0].Actor != "operator:alice" {
		t.Fatalf("key audit: %+v %v", audit, err)
	}

	for _, bad := range []url.Values{{"requests_per_second": {"-1"}}, {"burst": {"1.5"}}, {"max_concurrent": {"many"}}} {
		bad.Set("csrf", csrf)
		res, _ := post(t, c, page+"/limits", bad)
		if _, shown := followed(t, c, srv.URL, res); !strings.Contains(shown, "must be a") {
			t.Errorf("%v: no refusal shown:\n%.4000s", bad, shown)
		}
	}
	if got, _ := st.GetAccount(ctx, a.ID); got.Limits != nil {
		t.Fatalf("refused limits stored: %+v", got.Limits)
	}
}

// An expired key is shown as expired, as gatewayctl says.
func TestConsoleExpiredKey(t *testing.T) {
	srv, st := newConsole(t)
	ctx := context.Background()
	a, err := st.CreateAccount(ctx, "Expiring AB", "se")
	if err != nil {
		t.Fatal(err)
	}
	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	old, _, err := st.CreateKey(ctx, a.ID, "old", &past)
	if err != nil {
		t.Fatal(err)
	}
	fresh, _, err := st.CreateKey(ctx, a.ID, "fresh", &future)
	if err != nil {
		t.Fatal(err)
	}
	c := browser(t)
	c.Jar = insecureJar{jar: c.Jar}
	login(t, srv, c)
	_, body := get(t, c, srv.URL+"/console/accounts/"+a.ID)
	for id, want := range map[string]string{old.ID: `<td class="key-state"><span class="bad">expired</span></td>`, fresh.ID: `<td class="key-state">active</td>`} {
		i := strings.Index(body, `<tr id="key-`+id+`">`)
		if i < 0 || !strings.Contains(body[i:i+strings.Index(body[i:], "</tr>")], want) {
			t.Errorf("key %s: row lacks %q:\n%.6000s", id, want, body)
		}
	}
}

// A suspension needs a reason, which the account page then shows.
func TestConsoleSuspensionReason(t *testing.T) {
	srv, st := newConsole(t)
	ctx := context.Background()
	a, err := st.CreateAccount(ctx, "Suspended AB", "se")
	if err != nil {
		t.Fatal(err)
	}
	c := browser(t)
	c.Jar = insecureJar{jar: c.Jar}
	csrf := login(t, srv, c)
	page := srv.URL + "/console/accounts/" + a.ID
	if _, body := get(t, c, page); !strings.Contains(body, `name="reason" id="suspend-reason"`) {
		t.Fatalf("suspend form without a reason:\n%.4000s", body)
	}
	res, _ := post(t, c, page+"/suspend", url.Values{"csrf": {csrf}, "reason": {"  "}})
	if _, shown := followed(t, c, srv.URL, res); !strings.Contains(shown, "A suspension needs a reason.") {
		t.Fatalf("blank reason accepted:\n%.4000s", shown)
	}
	if got, _ := st.GetAccount(ctx, a.ID); got.Suspended {
		t.Fatal("suspended without a reason")
	}
	res, _ = post(t, c, page+"/suspend", url.Values{"csrf": {csrf}, "reason": {"chargeback <pending>"}})
	if _, shown := followed(t, c, srv.URL, res); !strings.Contains(shown, `id="suspension-reason">chargeback <pending></div>`) {
		t.Fatalf("reason not shown:\n%.4000s", shown)
	}
	if got, _ := st.GetAccount(ctx, a.ID); !got.Suspended || got.SuspensionReason != "chargeback <pending>" {
		t.Fatalf("stored %+v", got)
	}
}

// A model chip holds its "×" form: the page's markup keeps the form inside the chip (a
// form inside a <p> would close the paragraph and the chip, and the "×" would fall onto a
// line of its own).
func TestConsoleModelChips(t *testing.T) {
	srv, st := newConsole(t)
	ctx := context.Background()
	cat, _, err := catalog.Parse([]byte("models:\n- id: chip-model\n  endpoint: /v1/chat/completions\n  input_ore_per_million_tokens: 1\n  output_ore_per_million_tokens: 1\n" +
		"  routes:\n  - {id: r1, provider: p, base_url: http://127.0.0.1:9/v1, region: se-sto, country: SE, priority: 0, weight: 1, protocols: [/v1/chat/completions]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.UpsertCatalog(ctx, cat); err != nil {
		t.Fatal(err)
	}
	a, err := st.CreateAccount(ctx, "Chips AB", "se")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.EnableModels(ctx, a.ID, []string{"chip-model"}); err != nil {
		t.Fatal(err)
	}
	c := browser(t)
	c.Jar = insecureJar{jar: c.Jar}
	login(t, srv, c)
	_, body := get(t, c, srv.URL+"/console/accounts/"+a.ID)
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var chips, withForm int
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.Data != "span" || attr(n, "class") != "tag" {
			continue
		}
		chips++
		for d := range n.Descendants() {
			if d.Type == html.ElementNode && d.Data == "form" && attr(d, "class") == "tagform" {
				withForm++
			}
		}
	}
	if chips != 1 || withForm != 1 {
		t.Fatalf("%d chips, %d with their form, as a browser parses the page:\n%.6000s", chips, withForm, body)
	}
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}
