package console_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var secretRe = regexp.MustCompile(`<code id="secret">(gwo_[0-9a-f]{64})</code>`)

// An operator makes an API token in the console (roles up to its own), sees the secret
// once, uses it with the admin API and revokes it; an admin sees and revokes anyone's.
func TestConsoleTokens(t *testing.T) {
	t.Parallel()
	srv, _ := newConsole(t)
	c := browser(t)
	csrf := login(t, srv, c)
	_, page := get(t, c, srv.URL+"/console/tokens")
	if !strings.Contains(page, `id="tokens-link"`) || !strings.Contains(page, `<option value="operator"`) || strings.Contains(page, `<option value="admin"`) {
		t.Fatalf("tokens page of an operator: %.800s", page)
	}
	res, _ := post(t, c, srv.URL+"/console/tokens", url.Values{"csrf": {csrf}, "name": {"laptop"}, "role": {"operator"}, "expires_in_days": {"30"}})
	loc, page := followed(t, c, srv.URL, res)
	m := secretRe.FindStringSubmatch(page)
	if loc != "/console/tokens" || m == nil || !strings.Contains(page, "not shown again") {
		t.Fatalf("after making a token: %s %.800s", loc, page)
	}
	if _, again := get(t, c, srv.URL+"/console/tokens"); strings.Contains(again, m[1]) {
		t.Fatal("the secret is shown twice")
	}
	// A token is no console login, even when put in the session cookie.
	forged := browser(t)
	u, _ := url.Parse(srv.URL + "/console/")
	forged.Jar.SetCookies(u, []*http.Cookie{{Name: "gw_console", Value: m[1], Path: "/console/"}})
	if res, _ := get(t, forged, srv.URL+"/console/overview"); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/login" {
		t.Fatalf("an operator token as the console cookie: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	req, _ := http.NewRequest("GET", srv.URL+"/admin/v1/whoami", nil)
	req.Header.Set("Authorization", "Bearer "+m[1])
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var who struct{ Operator, Credential string }
	_ = json.NewDecoder(r.Body).Decode(&who)
	r.Body.Close()
	if r.StatusCode != 200 || who.Operator != "alice" || who.Credential != "operator_token" {
		t.Fatalf("whoami with the console's token: %d %+v", r.StatusCode, who)
	}
	// A role above one's own is refused with the API's reason.
	res, _ = post(t, c, srv.URL+"/console/tokens", url.Values{"csrf": {csrf}, "name": {"root"}, "role": {"admin"}})
	if _, page := followed(t, c, srv.URL, res); !strings.Contains(page, "cannot exceed") {
		t.Fatalf("token above the role: %.600s", page)
	}

	// An admin sees alice's token and revokes it.
	adminSend(t, srv, "POST", "/admin/v1/operators", `{"name":"ada","role":"admin","password":"ada's long password!"}`, 201)
	ac := browser(t)
	acsrf := loginAs(t, srv, ac, "ada", "ada's long password!")
	_, page = get(t, ac, srv.URL+"/console/tokens")
	id := regexp.MustCompile(`<tr id="token-(otk_[0-9a-f]{16})">`).FindStringSubmatch(page)
	if id == nil || !strings.Contains(page, "<td>alice</td>") {
		t.Fatalf("admin's tokens page: %.1000s", page)
	}
	res, _ = post(t, ac, srv.URL+"/console/tokens/"+id[1]+"/revoke", url.Values{"csrf": {acsrf}})
	if _, page := followed(t, ac, srv.URL, res); !strings.Contains(page, "Token laptop of alice revoked") {
		t.Fatalf("revoke: %.600s", page)
	}
	r, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 401 {
		t.Fatalf("revoked token: %d", r.StatusCode)
	}
	// The revocation is in the audit log in words.
	_, page = get(t, ac, srv.URL+"/console/audit")
	if !strings.Contains(page, "ada revoked the API token laptop of alice") || !strings.Contains(page, "alice made the API token laptop (operator)") {
		t.Fatalf("audit page: %.2000s", page)
	}
}
