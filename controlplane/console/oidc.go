package console

import (
	"context"
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// OIDCStarter begins a sign-in at an OIDC provider (*oidclogin.Provider); the admin API
// finishes it (POST /admin/v1/sessions/oidc).
type OIDCStarter interface {
	AuthURL(ctx context.Context, state, nonce, verifier string) (string, error)
	Issuer() string
}

// oidcCookie keeps a sign-in's state, nonce and PKCE verifier from the start to the
// callback. It is SameSite=Lax, not Strict: the callback is a navigation from the
// provider's site, on which a Strict cookie would not be sent.
const (
	oidcCookie = "gw_console_oidc"
	oidcPath   = "/console/oidc/"
)

// oidcLabel names the provider on the login page: its issuer's host.
func (c *Console) oidcLabel() string {
	if c.cfg.OIDC == nil {
		return ""
	}
	if u, err := url.Parse(c.cfg.OIDC.Issuer()); err == nil && u.Host != "" {
		return u.Host
	}
	return "single sign-on"
}

// oidcStart is GET /console/oidc/start: a fresh state, nonce and verifier in the cookie,
// and the browser sent to the provider.
func (c *Console) oidcStart(w http.ResponseWriter, r *http.Request) {
	if c.cfg.OIDC == nil {
		http.Error(w, "Not found.", http.StatusNotFound)
		return
	}
	state, nonce, verifier := randomToken(), randomToken(), oauth2.GenerateVerifier()
	to, err := c.cfg.OIDC.AuthURL(r.Context(), state, nonce, verifier)
	if err != nil {
		c.log.Error("console: OIDC sign-in", "err", err)
		c.failed(w, r, "/console/login", "The identity provider cannot be reached; try again, or log in with a password.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: state + "." + nonce + "." + verifier, Path: oidcPath,
		MaxAge: int((10 * time.Minute).Seconds()), Secure: !c.cfg.InsecureCookies, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, to, http.StatusFound)
}

// oidcCallback is GET /console/oidc/callback: the provider's answer, checked against the
// cookie's state, handed to the admin API with the verifier and nonce. The session cookie
// is set on a small page that moves on by itself: a redirect would still count as the
// provider's navigation, and the SameSite=Strict session cookie would not be sent with it.
func (c *Console) oidcCallback(w http.ResponseWriter, r *http.Request) {
	if c.cfg.OIDC == nil {
		http.Error(w, "Not found.", http.StatusNotFound)
		return
	}
	ck, err := r.Cookie(oidcCookie)
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: "", Path: oidcPath, MaxAge: -1, Secure: !c.cfg.InsecureCookies,
		HttpOnly: true, SameSite: http.SameSiteLaxMode})
	q := r.URL.Query()
	parts := []string{}
	if err == nil {
		parts = strings.Split(ck.Value, ".")
	}
	switch {
	case len(parts) != 3 || subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(parts[0])) != 1:
		c.failed(w, r, "/console/login", "The sign-in expired or did not start here; try again.")
		return
	case q.Get("error") != "":
		c.failed(w, r, "/console/login", "The identity provider refused the sign-in: "+q.Get("error"))
		return
	}
	var s adminapi.Session
	st, msg := c.api(r, nil, http.MethodPost, "/admin/v1/sessions/oidc",
		adminapi.OIDCLoginRequest{Code: q.Get("code"), CodeVerifier: parts[2], Nonce: parts[1]}, &s)
	if st != http.StatusCreated {
		c.failed(w, r, "/console/login", msg)
		return
	}
	c.clearCookie(w, loginCookie)
	c.setCookie(w, sessionCookie, s.Token, time.Until(s.ExpiresAt))
	c.render(w, http.StatusOK, "signedin", page{Title: "Signed in", Data: s.Operator})
}
