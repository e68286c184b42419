package console_test

import (
	"context"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/sekgate/gateway/controlplane/api/apitest"
	"github.com/sekgate/gateway/controlplane/console"
	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/controlplane/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const adminToken = "adm_console_test_0123456789abcdef0123"

// newConsole serves the console beside the real admin API on real Postgres, with an
// operator alice (operator role).
func newConsole(t *testing.T) (*httptest.Server, *store.Store) {
	t.Helper()
	h, st := apitest.New(t, adminToken)
	con, err := console.New(console.Config{API: h.Admin, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(console.Prefix, con)
	mux.Handle("/", h.Admin)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest("POST", srv.URL+"/admin/v1/operators", strings.NewReader(`{"name":"alice","role":"operator","password":"alice's long password"}`))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 201 {
		t.Fatalf("create operator: %v %v", res, err)
	}
	return srv, st
}

// browser is a cookie-keeping client that does not follow redirects.
func browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func post(t *testing.T, c *http.Client, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	res, err := c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// followed follows a redirect with c and returns where it went and the page there, whose
// notice or error the redirect's cookie carries (never the URL).
func followed(t *testing.T, c *http.Client, base string, res *http.Response) (string, string) {
	t.Helper()
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || strings.Contains(loc, "?") {
		t.Fatalf("answer %d to %q, want a redirect without a query", res.StatusCode, loc)
	}
	_, page := get(t, c, base+loc)
	return loc, html.UnescapeString(page)
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the page: %.300s", page)
	}
	return m[1]
}

func login(t *testing.T, srv *httptest.Server, c *http.Client) string {
	return loginAs(t, srv, c, "alice", "alice's long password")
}

func loginAs(t *testing.T, srv *httptest.Server, c *http.Client, name, pw string) string {
	t.Helper()
	_, page := get(t, c, srv.URL+"/console/login")
	res, _ := post(t, c, srv.URL+"/console/login", url.Values{"csrf": {csrfOf(t, page)}, "name": {name}, "password": {pw}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/accounts" {
		t.Fatalf("login: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	var sess *http.Cookie
	for _, ck := range res.Cookies() {
		if ck.Name == "gw_console" {
			sess = ck
		}
	}
	if sess == nil || !sess.Secure || !sess.HttpOnly || sess.SameSite != http.SameSiteStrictMode || sess.Path != "/console/" {
		t.Fatalf("session cookie %+v", sess)
	}
	_, page = get(t, c, srv.URL+"/console/accounts")
	return csrfOf(t, page)
}

func TestConsoleProtection(t *testing.T) {
	srv, st := newConsole(t)
	// The cookie jar keeps Secure cookies for http://127.0.0.1 only when told it is
	// trustworthy: send them by hand through a jar keyed on https.
	c := browser(t)
	c.Jar = insecureJar{jar: c.Jar}

	// Without a session every page sends the browser to the login page.
	for _, p := range []string{"/console/accounts", "/console/audit", "/console/records", "/console/catalogue"} {
		if res, _ := get(t, c, srv.URL+p); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/login" {
			t.Errorf("%s without a session: %d %s", p, res.StatusCode, res.Header.Get("Location"))
		}
	}
	// Every answer carries the strict policy.
	res, page := get(t, c, srv.URL+"/console/login")
	if csp := res.Header.Get("Content-Security-Policy"); csp != console.CSP || !strings.Contains(csp, "script-src 'self'") ||
		strings.Contains(csp, "unsafe-inline") || res.Header.Get("X-Frame-Options") != "DENY" || res.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("headers %v", res.Header)
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, " style=") || strings.Contains(page, "onclick") {
		t.Fatal("inline script or style in the login page")
	}
	// A login form without its CSRF token is refused.
	res, _ = post(t, c, srv.URL+"/console/login", url.Values{"name": {"alice"}, "password": {"alice's long password"}})
	if loc, page := followed(t, c, srv.URL, res); loc != "/console/login" || !strings.Contains(page, "The login form expired") {
		t.Fatalf("login without CSRF: %d %s", res.StatusCode, loc)
	}
	// The text of a link's error or notice is never shown.
	if _, page := get(t, c, srv.URL+"/console/login?error=Call+0700+now&notice=Your+account+is+locked"); strings.Contains(page, "0700") || strings.Contains(page, "locked") {
		t.Fatal("a console page shows free text from its URL")
	}
	// A wrong password: back to the form with the API's message.
	_, page = get(t, c, srv.URL+"/console/login")
	res, _ = post(t, c, srv.URL+"/console/login", url.Values{"csrf": {csrfOf(t, page)}, "name": {"alice"}, "password": {"wrong password!!"}})
	if loc, page := followed(t, c, srv.URL, res); !strings.Contains(page, "Unknown operator") {
		t.Fatalf("wrong password: %s", loc)
	}

	csrf := login(t, srv, c)
	// A form without the session's CSRF token changes nothing.
	res, _ = post(t, c, srv.URL+"/console/accounts", url.Values{"customer": {"No CSRF AB"}, "residency": {"se"}})
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("form without CSRF: %d", res.StatusCode)
	}
	res, _ = post(t, c, srv.URL+"/console/accounts", url.Values{"csrf": {strings.Repeat("0", 64)}, "customer": {"Bad CSRF AB"}, "residency": {"se"}})
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("form with a wrong CSRF token: %d", res.StatusCode)
	}
	if accts, _ := st.ListAccounts(context.Background()); len(accts) != 0 {
		t.Fatalf("accounts made without CSRF: %+v", accts)
	}
	// With it, the account is made through the API (and audited as alice).
	res, _ = post(t, c, srv.URL+"/console/accounts", url.Values{"csrf": {csrf}, "customer": {"Console AB"}, "residency": {"eu"}})
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/accounts/acct_") {
		t.Fatalf("create account: %d %s", res.StatusCode, loc)
	}
	acct := strings.TrimPrefix(loc, "/console/accounts/")
	audit, err := st.ListAudit(context.Background(), store.AuditQuery{Target: acct, Limit: 10})
	if err != nil || len(audit) != 1 || audit[0].Actor != "operator:alice" || audit[0].Action != "POST /admin/v1/accounts" {
		t.Fatalf("audit of the console's change: %+v %v", audit, err)
	}
	// Creating a key ends with a redirect (a reload repeats nothing); the page it loads shows
	// the secret once, and nothing of it is in a URL or a cookie.
	res, _ = post(t, c, srv.URL+"/console/accounts/"+acct+"/keys", url.Values{"csrf": {csrf}, "name": {"ci"}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/accounts/"+acct {
		t.Fatalf("create key: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	for _, ck := range res.Cookies() {
		if strings.Contains(ck.Value, "sgw_") {
			t.Fatal("the secret is in a cookie")
		}
	}
	_, page = get(t, c, srv.URL+"/console/accounts/"+acct)
	secret := regexp.MustCompile(`<code id="secret">(sgw_[0-9a-f_]+)</code>`).FindStringSubmatch(page)
	if secret == nil {
		t.Fatalf("the secret is not shown after the redirect:\n%.2000s", page)
	}
	if _, again := get(t, c, srv.URL+"/console/accounts/"+acct); strings.Contains(again, secret[1]) {
		t.Fatal("the secret is shown again")
	}
	if keys, err := st.ListKeys(context.Background(), acct); err != nil || len(keys) != 1 {
		t.Fatalf("reloading created keys: %d %v", len(keys), err)
	}
	// Static assets are embedded.
	if res, body := get(t, c, srv.URL+"/console/static/console.js"); res.StatusCode != 200 || !strings.Contains(body, "clipboard") {
		t.Fatalf("console.js: %d", res.StatusCode)
	}
	// Logging out ends the session in the API too.
	post(t, c, srv.URL+"/console/logout", url.Values{"csrf": {csrf}})
	if res, _ := get(t, c, srv.URL+"/console/accounts"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("after logout: %d", res.StatusCode)
	}
}

// insecureJar stores and sends Secure cookies over plain HTTP to the test server, as
// browsers do for 127.0.0.1.
type insecureJar struct{ jar http.CookieJar }

func (j insecureJar) secure(u *url.URL) *url.URL               { v := *u; v.Scheme = "https"; return &v }
func (j insecureJar) SetCookies(u *url.URL, cs []*http.Cookie) { j.jar.SetCookies(j.secure(u), cs) }
func (j insecureJar) Cookies(u *url.URL) []*http.Cookie        { return j.jar.Cookies(j.secure(u)) }

const catalogueYAML = `models:
- id: tiny-chat
  aliases: [tiny]
  endpoint: /v1/chat/completions
  input_ore_per_million_tokens: 150
  output_ore_per_million_tokens: 300
  routes:
  - {id: tiny-se, provider: sim, base_url: "http://127.0.0.1:9/v1", protocols: [/v1/chat/completions], region: se-sto-1, country: SE, priority: 0, weight: 1}
`

// A catalogue file is previewed (nothing changes), then applied by an admin; an operator
// sees no load form and the API refuses the apply.
func TestConsoleCatalogueLoad(t *testing.T) {
	srv, st := newConsole(t)
	req, _ := http.NewRequest("POST", srv.URL+"/admin/v1/operators", strings.NewReader(`{"name":"ada","role":"admin","password":"ada's long password"}`))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 201 {
		t.Fatalf("create admin: %v %v", res, err)
	}
	op := browser(t)
	op.Jar = insecureJar{jar: op.Jar}
	opCSRF := login(t, srv, op)
	if _, page := get(t, op, srv.URL+"/console/catalogue"); strings.Contains(page, "catalogue-form") {
		t.Fatal("an operator is offered the catalogue load form")
	}
	adm := browser(t)
	adm.Jar = insecureJar{jar: adm.Jar}
	csrf := loginAs(t, srv, adm, "ada", "ada's long password")
	res, page := post(t, adm, srv.URL+"/console/catalogue/preview", url.Values{"csrf": {csrf}, "catalogue": {catalogueYAML}})
	if res.StatusCode != 200 || !strings.Contains(page, `<td class="new">new</td>`) || !strings.Contains(page, "tiny-chat") {
		t.Fatalf("preview: %d %.2000s", res.StatusCode, page)
	}
	if models, _ := st.ListModels(context.Background()); len(models) != 0 {
		t.Fatalf("the preview changed the catalogue: %+v", models)
	}
	body := regexp.MustCompile(`(?s)<textarea name="catalogue" hidden>(.*?)</textarea>`).FindStringSubmatch(page)
	if body == nil {
		t.Fatal("no catalogue to apply in the preview")
	}
	applied := html.UnescapeString(body[1])
	// The operator's apply is refused by the API.
	res, _ = post(t, op, srv.URL+"/console/catalogue/apply", url.Values{"csrf": {opCSRF}, "catalogue": {applied}})
	if loc, page := followed(t, op, srv.URL, res); !strings.Contains(page, "admin role") {
		t.Fatalf("operator apply: %d %s", res.StatusCode, loc)
	}
	res, _ = post(t, adm, srv.URL+"/console/catalogue/apply", url.Values{"csrf": {csrf}, "catalogue": {applied}})
	if loc, page := followed(t, adm, srv.URL, res); !strings.Contains(page, "Catalogue loaded") {
		t.Fatalf("admin apply: %d %s", res.StatusCode, loc)
	}
	models, err := st.ListModels(context.Background())
	if err != nil || len(models) != 1 || models[0].ID != "tiny-chat" || len(models[0].Routes) != 1 {
		t.Fatalf("catalogue after apply: %+v %v", models, err)
	}
	// Breakers as nodes report them: "not reported" until one does, then per route.
	if _, page := get(t, adm, srv.URL+"/console/catalogue"); !strings.Contains(page, "not reported") {
		t.Fatal("catalogue claims breaker states no node reported")
	}
	ctx := context.Background()
	if err := st.TouchNode(ctx, "node-z", 1, "se-sto", -1); err != nil {
		t.Fatal(err)
	}
	if err := st.ReportBreakers(ctx, "node-z", map[string]string{"tiny-se": "open", "tiny-se@10.0.0.5:8000": "half-open"}); err != nil {
		t.Fatal(err)
	}
	// A replica's breaker shows beside its route, named by its address.
	if _, page := get(t, adm, srv.URL+"/console/catalogue"); !strings.Contains(page, `<span class="bad">open on node-z, replica 10.0.0.5:8000 half-open on node-z</span>`) {
		t.Fatalf("catalogue without the reported breakers: %.3000s", page)
	}
	if _, page := get(t, adm, srv.URL+"/console/nodes"); !strings.Contains(page, "tiny-se: open") {
		t.Fatal("nodes page without the reported breaker")
	}
	// The same file again: nothing would change.
	_, page = post(t, adm, srv.URL+"/console/catalogue/preview", url.Values{"csrf": {csrf}, "catalogue": {catalogueYAML}})
	if !strings.Contains(page, "0 model(s) would change") || !strings.Contains(page, `<td class="unchanged">unchanged</td>`) {
		t.Fatalf("second preview: %.2000s", page)
	}
}
