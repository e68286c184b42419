package console_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/sekgate/gateway/controlplane/store"
)

// The account page shows the account's budget in a card and each key's in its row, with
// the spend of the period, and sets and removes them through the admin API (audited); a
// bad amount changes nothing.
func TestConsoleBudgets(t *testing.T) {
	srv, st := newConsole(t)
	ctx := context.Background()
	a, err := st.CreateAccount(ctx, "Budgeted AB", "se")
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
	cell := func(body, start, end string) string {
		t.Helper()
		i := strings.Index(body, start)
		if i < 0 {
			t.Fatalf("no %q:\n%.6000s", start, body)
		}
		rest := body[i:]
		return rest[:strings.Index(rest, end)]
	}
	_, body := get(t, c, page)
	if card := cell(body, `id="budget"`, `</div></div>`); !strings.Contains(card, "none") {
		t.Fatalf("no budget shown as none: %s", card)
	}
	steps := []struct {
		name, path string
		form       url.Values
		notice     string
		card, key  string // shown after the step
	}{
		{"account budget", "/console/accounts/" + a.ID + "/budget", url.Values{"limit_sek": {"1 000,50"}, "period": {"week"}},
			"Budget of the account set: 1000.50 SEK per week (0.00 SEK spent so far).", "0.00 of 1,000.50 SEK this week", "none"},
		{"key budget", "/console/keys/" + k.ID + "/budget", url.Values{"account": {a.ID}, "limit_sek": {"25"}, "period": {"day"}},
			"Budget of key " + k.ID + " set: 25.00 SEK per day", "0.00 of 1,000.50 SEK this week", "0.00 / 25.00 SEK per day (0%)"},
		{"key removed", "/console/keys/" + k.ID + "/budget", url.Values{"account": {a.ID}, "clear": {"1"}},
			"Budget of key " + k.ID + " removed.", "this week", "none"},
		{"account removed", "/console/accounts/" + a.ID + "/budget", url.Values{"clear": {"1"}},
			"Budget of the account removed.", "no spend cap", "none"},
	}
	for _, s := range steps {
		s.form.Set("csrf", csrf)
		res, _ := post(t, c, srv.URL+s.path, s.form)
		loc, shown := followed(t, c, srv.URL, res)
		card := cell(shown, `id="budget"`, `</div></div>`)
		row := cell(shown, `<tr id="key-`+k.ID+`">`, "</tr>")
		if loc != "/console/accounts/"+a.ID || !strings.Contains(shown, s.notice) || !strings.Contains(card, s.card) ||
			!strings.Contains(cell(row, `class="key-budget"`, "</td>"), s.key) {
			t.Fatalf("%s: at %s, want %q, card %q, key %q:\ncard %s\nrow %s\n%.3000s", s.name, loc, s.notice, s.card, s.key, card, row, shown)
		}
	}
	audit, err := st.ListAudit(ctx, store.AuditQuery{Target: k.ID, Limit: 10})
	if err != nil || len(audit) != 2 || audit[0].Action != "DELETE /admin/v1/keys/{id}/budget" || audit[1].Action != "PUT /admin/v1/keys/{id}/budget" {
		t.Fatalf("key audit: %+v %v", audit, err)
	}
	for _, bad := range []url.Values{{"limit_sek": {"-5"}}, {"limit_sek": {"ten"}}, {"limit_sek": {"5"}, "period": {"year"}}} {
		bad.Set("csrf", csrf)
		res, _ := post(t, c, page+"/budget", bad)
		if _, shown := followed(t, c, srv.URL, res); !strings.Contains(shown, "must be") {
			t.Errorf("%v: no refusal shown:\n%.3000s", bad, cell(shown, "<main", "</h1>"))
		}
	}
	if budgets, err := st.Budgets(ctx, a.ID); err != nil || len(budgets) != 0 {
		t.Fatalf("bad forms changed the budgets: %+v %v", budgets, err)
	}
}
