package console

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// tokenExpiries are the expiry choices of the new-token form, in days (0: never).
var tokenExpiries = []struct {
	Days  int
	Label string
}{{30, "30 days"}, {90, "90 days"}, {365, "a year"}, {0, "never"}}

// tokensPage is GET /console/tokens: the operator's API tokens (an admin's page lists
// everyone's), a form for a new one and, once after making it, its secret.
func (c *Console) tokensPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := page{Title: "API tokens", Session: s}
	c.flash(w, r, &p)
	var l adminapi.List[adminapi.OperatorToken]
	if st, msg := c.api(r, s, http.MethodGet, "/admin/v1/tokens", nil, &l); st != http.StatusOK {
		p.Error = msg
	}
	var created *adminapi.CreatedToken
	if a, ok := c.takeOnce(w, r, s); ok {
		created, p.Notice = a.opToken, a.notice
	}
	roles := []string{}
	for _, role := range []string{"viewer", "operator", "admin"} {
		roles = append(roles, role)
		if role == s.Role {
			break
		}
	}
	p.Data = struct {
		Tokens   []adminapi.OperatorToken
		Created  *adminapi.CreatedToken
		Roles    []string
		Expiries any
		All      bool
	}{l.Data, created, roles, tokenExpiries, s.Role == "admin"}
	c.render(w, http.StatusOK, "tokens", p)
}

// createToken is POST /console/tokens: the token is made and its secret shown once, after
// a redirect (a reload makes nothing), never in a URL.
func (c *Console) createToken(w http.ResponseWriter, r *http.Request, s *session) {
	in := adminapi.CreateTokenRequest{Name: strings.TrimSpace(r.PostFormValue("name")), Role: r.PostFormValue("role")}
	if d := r.PostFormValue("expires_in_days"); d != "" && d != "0" {
		n, ok := atoi(d)
		if !ok || n < 1 || n > 3650 {
			c.failed(w, r, "/console/tokens", "Expiry must be a whole number of days.")
			return
		}
		t := c.now().UTC().AddDate(0, 0, n).Truncate(time.Second)
		in.ExpiresAt = &t
	}
	var ct adminapi.CreatedToken
	if st, msg := c.api(r, s, http.MethodPost, "/admin/v1/tokens", in, &ct); st != http.StatusCreated {
		c.failed(w, r, "/console/tokens", msg)
		return
	}
	c.redirectOnce(w, r, s, "/console/tokens", onceAnswer{opToken: &ct,
		notice: "Token " + ct.Name + " made. Copy the secret now: it is not shown again."})
}

// revokeToken is POST /console/tokens/{id}/revoke.
func (c *Console) revokeToken(w http.ResponseWriter, r *http.Request, s *session) {
	var t adminapi.OperatorToken
	if st, msg := c.api(r, s, http.MethodPost, "/admin/v1/tokens/"+url.PathEscape(r.PathValue("id"))+"/revoke", nil, &t); st != http.StatusOK {
		c.failed(w, r, "/console/tokens", msg)
		return
	}
	c.done(w, r, "/console/tokens", "Token "+t.Name+" of "+t.Operator+" revoked.")
}
