package console_test

import (
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/oauth2-proxy/mockoidc"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/api"
	"github.com/sekgate/gateway/controlplane/api/apitest"
	"github.com/sekgate/gateway/controlplane/console"
	"github.com/sekgate/gateway/controlplane/oidclogin"
)

// oidcConsole serves the console and the real admin API with sign-in through a mock OIDC
// provider the test runs: example.com addresses may enter (viewer unless their groups map
// to more), the group "platform" makes an admin and "engineering" an operator.
func oidcConsole(t *testing.T) (*httptest.Server, *mockoidc.MockOIDC) {
	t.Helper()
	m, err := mockoidc.Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	cfg := m.Config()
	prov, err := oidclogin.New(oidclogin.Config{IssuerURL: cfg.Issuer, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret,
		RedirectURL: srv.URL + "/console/oidc/callback", Scopes: []string{"profile", "groups"},
		AllowedDomains: []string{"example.com"}, DefaultRole: "viewer", RoleClaim: "groups",
		RoleMap: map[string]string{"platform": "admin", "engineering": "operator"}})
	if err != nil {
		t.Fatal(err)
	}
	apiH, _ := apitest.NewWith(t, adminToken, func(c *api.Config) { c.OIDC = prov })
	con, err := console.New(console.Config{API: apiH.Admin, OIDC: prov, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(console.Prefix, con)
	mux.Handle("/", apiH.Admin)
	h = mux
	return srv, m
}

// signIn goes through the provider as a browser does (start, the provider's authorize
// page, the callback) and returns the callback's answer and page.
func signIn(t *testing.T, c *http.Client, srv *httptest.Server) (*http.Response, string) {
	t.Helper()
	res, _ := get(t, c, srv.URL+"/console/oidc/start")
	if res.StatusCode != http.StatusFound {
		t.Fatalf("start: %d", res.StatusCode)
	}
	var state *http.Cookie
	for _, ck := range res.Cookies() {
		if ck.Name == "gw_console_oidc" {
			state = ck
		}
	}
	if state == nil || !state.HttpOnly || state.SameSite != http.SameSiteLaxMode || state.Path != "/console/oidc/" {
		t.Fatalf("sign-in cookie %+v", state)
	}
	auth, _ := url.Parse(res.Header.Get("Location"))
	if q := auth.Query(); q.Get("code_challenge_method") != "S256" || q.Get("nonce") == "" || !strings.Contains(q.Get("scope"), "email") {
		t.Fatalf("authorization request %s", auth)
	}
	res, _ = get(t, c, auth.String())
	back := res.Header.Get("Location")
	if res.StatusCode != http.StatusFound || !strings.HasPrefix(back, srv.URL+"/console/oidc/callback?") {
		t.Fatalf("provider answered %d to %q", res.StatusCode, back)
	}
	res, page := get(t, c, back)
	return res, html.UnescapeString(page)
}

func adminGet(t *testing.T, srv *httptest.Server, path string, out any) {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET %s: %v %v", path, res, err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

func adminSend(t *testing.T, srv *httptest.Server, method, path, body string, want int) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != want {
		t.Fatalf("%s %s: %v %v", method, path, res, err)
	}
	res.Body.Close()
}

func operatorNamed(t *testing.T, srv *httptest.Server, name string) adminapi.Operator {
	t.Helper()
	var l adminapi.List[adminapi.Operator]
	adminGet(t, srv, "/admin/v1/operators", &l)
	for _, o := range l.Data {
		if o.Name == name {
			return o
		}
	}
	t.Fatalf("no operator %s in %+v", name, l.Data)
	return adminapi.Operator{}
}

// The console's real sign-in flow against a provider the test starts: a new example.com
// user becomes an operator named after its email with the role its groups map to; a later
// sign-in with other groups changes the role; both are audited. Refusals land on the login
// page with the reason.
func TestOIDCSignIn(t *testing.T) {
	t.Parallel()
	srv, m := oidcConsole(t)
	c := browser(t)
	_, page := get(t, c, srv.URL+"/console/login")
	if !strings.Contains(page, `id="oidc-login"`) || !strings.Contains(page, "Sign in with 127.0.0.1") {
		t.Fatalf("login page offers no OIDC sign-in: %.500s", page)
	}

	m.QueueUser(&mockoidc.MockUser{Subject: "u1", Email: "Jane.Doe@example.com", EmailVerified: true, Groups: []string{"engineering"}})
	res, page := signIn(t, c, srv)
	if res.StatusCode != 200 || !strings.Contains(page, "Signed in as jane.doe") || !strings.Contains(page, `http-equiv="refresh"`) {
		t.Fatalf("callback: %d %.400s", res.StatusCode, page)
	}
	_, page = get(t, c, srv.URL+"/console/overview")
	if !strings.Contains(page, `<span id="whoami">jane.doe (operator)</span>`) {
		t.Fatalf("overview after sign-in: %.600s", page)
	}
	if o := operatorNamed(t, srv, "jane.doe"); o.Email != "jane.doe@example.com" || o.Role != "operator" {
		t.Fatalf("operator made by sign-in %+v", o)
	}
	// A change made in the session is audited as jane.doe's, through an OIDC session.
	res, _ = post(t, c, srv.URL+"/console/accounts", url.Values{"csrf": {csrfOf(t, page)}, "customer": {"OIDC AB"}, "residency": {"se"}})
	loc, _ := followed(t, c, srv.URL, res)
	var made adminapi.AuditPage
	adminGet(t, srv, "/admin/v1/audit?target="+strings.TrimPrefix(loc, "/console/accounts/"), &made)
	if len(made.Data) != 1 || made.Data[0].Actor != "operator:jane.doe" || made.Data[0].Credential != "oidc_session" {
		t.Fatalf("audit of a change in an OIDC session (%s): %+v", loc, made.Data)
	}
	// A password login is refused for an operator without a password.
	res, err := http.Post(srv.URL+"/admin/v1/sessions", "application/json", strings.NewReader(`{"name":"jane.doe","password":"any long password at all"}`))
	if err != nil || res.StatusCode != 401 {
		t.Fatalf("password login of an OIDC operator: %v %v", res, err)
	}
	res.Body.Close()

	// The next sign-in maps to admin: the role follows the provider.
	m.QueueUser(&mockoidc.MockUser{Subject: "u1", Email: "jane.doe@example.com", EmailVerified: true, Groups: []string{"engineering", "platform"}})
	if res, page := signIn(t, browser(t), srv); res.StatusCode != 200 || !strings.Contains(page, "jane.doe") {
		t.Fatalf("second sign-in: %d %.300s", res.StatusCode, page)
	}
	if o := operatorNamed(t, srv, "jane.doe"); o.Role != "admin" {
		t.Fatalf("role after the second sign-in %+v", o)
	}
	var audit adminapi.AuditPage
	adminGet(t, srv, "/admin/v1/audit?target=jane.doe", &audit)
	if len(audit.Data) != 2 || audit.Data[0].Credential != "oidc_session" || audit.Data[0].Actor != "operator:jane.doe" ||
		!strings.Contains(string(audit.Data[0].Before), `"operator"`) || !strings.Contains(string(audit.Data[0].After), `"admin"`) {
		t.Fatalf("audit of the sign-ins: %+v", audit.Data)
	}

	// An operator with a password, linked by email, keeps its own role when no group maps.
	adminSend(t, srv, "POST", "/admin/v1/operators", `{"name":"alice","role":"operator","password":"alice's long password","email":"alice@example.com"}`, 201)
	m.QueueUser(&mockoidc.MockUser{Subject: "u2", Email: "alice@example.com", EmailVerified: true})
	ac := browser(t)
	if res, page := signIn(t, ac, srv); res.StatusCode != 200 || !strings.Contains(page, "Signed in as alice") {
		t.Fatalf("linked operator: %d %.300s", res.StatusCode, page)
	}
	if _, page := get(t, ac, srv.URL+"/console/overview"); !strings.Contains(page, "alice (operator)") {
		t.Fatalf("alice's overview: %.400s", page)
	}

	refusals := []struct {
		name string
		user *mockoidc.MockUser
		want string
	}{
		{"other domain", &mockoidc.MockUser{Subject: "u3", Email: "mallory@example.org", EmailVerified: true, Groups: []string{"platform"}}, "may not use this console"},
		{"unverified email", &mockoidc.MockUser{Subject: "u4", Email: "bob@example.com", EmailVerified: false}, "may not use this console"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			m.QueueUser(tt.user)
			b := browser(t)
			res, _ := signIn(t, b, srv)
			if loc, page := followed(t, b, srv.URL, res); loc != "/console/login" || !strings.Contains(page, tt.want) {
				t.Fatalf("refusal went to %s: %.400s", loc, page)
			}
		})
	}
	// A disabled operator cannot sign in.
	adminSend(t, srv, "PATCH", "/admin/v1/operators/alice", `{"disabled":true}`, 200)
	m.QueueUser(&mockoidc.MockUser{Subject: "u2", Email: "alice@example.com", EmailVerified: true})
	b := browser(t)
	res, _ = signIn(t, b, srv)
	if loc, page := followed(t, b, srv.URL, res); loc != "/console/login" || !strings.Contains(page, "may not use this console") {
		t.Fatalf("disabled operator: %s %.300s", loc, page)
	}
}

// A callback whose state is not the one the browser started with, or that comes without
// the sign-in cookie, is refused before the code is used.
func TestOIDCCallbackState(t *testing.T) {
	t.Parallel()
	srv, _ := oidcConsole(t)
	c := browser(t)
	res, _ := get(t, c, srv.URL+"/console/oidc/start")
	if res.StatusCode != http.StatusFound {
		t.Fatalf("start: %d", res.StatusCode)
	}
	for _, u := range []string{
		srv.URL + "/console/oidc/callback?code=abc&state=forged",
		srv.URL + "/console/oidc/callback?code=abc",
	} {
		res, _ := get(t, c, u)
		if loc, page := followed(t, c, srv.URL, res); loc != "/console/login" || !strings.Contains(page, "did not start here") {
			t.Fatalf("%s: %s %.300s", u, loc, page)
		}
	}
	// Without OIDC configured the paths do not exist.
	plain, _ := newConsole(t)
	if res, _ := get(t, browser(t), plain.URL+"/console/oidc/start"); res.StatusCode != 404 {
		t.Fatalf("start without OIDC: %d", res.StatusCode)
	}
	if _, page := get(t, browser(t), plain.URL+"/console/login"); strings.Contains(page, "oidc-login") {
		t.Fatal("login page offers OIDC without a provider")
	}
}
