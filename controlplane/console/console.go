// Package console is the operator console: server-rendered pages (html/template, assets
// embedded, nothing fetched from elsewhere) served by the control plane on the admin
// listener under /console/.
//
// The console has no access of its own to the store. Every page and every action calls
// the control plane's admin API in process: the console builds the API request, with the
// operator's session token as bearer, and serves it through the same http.Handler the
// admin listener serves (authentication, role checks and the audit log included). So an
// operator can do nothing in the console that the API would refuse them.
//
// Protection: a login form (rate limited by the API), the session token in a cookie that
// is Secure, HttpOnly and SameSite=Strict, a CSRF token in every form (the session's,
// from the API; a double-submit cookie on the login form), a strict Content-Security-
// Policy without inline script, and no secrets in URLs (key secrets are shown once in the
// answer to the form that created them).
package console

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Cookie names. The session cookie is scoped to the console's path.
const (
	sessionCookie = "gw_console"
	loginCookie   = "gw_console_login"
	// Prefix is where the console is mounted.
	Prefix = "/console/"
)

// CSP is the console's Content-Security-Policy: only its own scripts, styles and images,
// no inline script, forms only to itself, never framed.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Config configures the console.
type Config struct {
	// API is the admin API handler the console calls in process. Required.
	API http.Handler
	// InsecureCookies leaves Secure off the cookies; only for a console reached over plain
	// HTTP on a host other than localhost (browsers accept Secure cookies from
	// http://localhost and 127.0.0.1).
	InsecureCookies bool
	// OIDC, when set, offers sign-in through an OIDC provider on the login page.
	OIDC OIDCStarter
	// Logger (default slog.Default()) and clock (default time.Now).
	Logger *slog.Logger
	Now    func() time.Time
}

// Console serves the console's pages.
type Console struct {
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
	pages map[string]*template.Template
	mux   *http.ServeMux
	once  onceStore // answers shown once after a redirect (once.go)
}

// New validates cfg and builds the console.
func New(cfg Config) (*Console, error) {
	if cfg.API == nil {
		return nil, errors.New("console: the admin API handler is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Console{cfg: cfg, log: cfg.Logger, now: cfg.Now, pages: map[string]*template.Template{}, mux: http.NewServeMux()}
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if strings.HasSuffix(n, "/layout.html") {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", n, err)
		}
		c.pages[strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")] = t
	}
	c.routes()
	return c, nil
}

// ServeHTTP sets the console's security headers and serves the page.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	c.mux.ServeHTTP(w, r)
}

func (c *Console) routes() {
	static, _ := fs.Sub(staticFiles, "static")
	c.mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", http.FileServerFS(static)))
	c.mux.HandleFunc("GET /console/login", c.loginPage)
	c.mux.HandleFunc("POST /console/login", c.login)
	c.mux.HandleFunc("POST /console/logout", c.authed(c.logout))
	c.mux.HandleFunc("GET /console/oidc/start", c.oidcStart)
	c.mux.HandleFunc("GET /console/oidc/callback", c.oidcCallback)
	c.mux.HandleFunc("GET /console/tokens", c.authed(c.tokensPage))
	c.mux.HandleFunc("POST /console/tokens", c.authed(c.createToken))
	c.mux.HandleFunc("POST /console/tokens/{id}/revoke", c.authed(c.revokeToken))
	c.mux.HandleFunc("GET /console/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/console/overview", http.StatusSeeOther)
	})
	c.mux.HandleFunc("GET /console/overview", c.authed(c.overviewPage))
	c.mux.HandleFunc("GET /console/accounts", c.authed(c.accountsPage))
	c.mux.HandleFunc("POST /console/accounts", c.authed(c.createAccount))
	c.mux.HandleFunc("GET /console/accounts/{id}", c.authed(c.accountPage))
	c.mux.HandleFunc("POST /console/accounts/{id}/{action}", c.authed(c.accountAction))
	c.mux.HandleFunc("POST /console/accounts/{id}/limits", c.authed(c.accountLimits))
	c.mux.HandleFunc("POST /console/keys/{id}/revoke", c.authed(c.revokeKey))
	c.mux.HandleFunc("POST /console/keys/{id}/limits", c.authed(c.keyLimits))
	c.mux.HandleFunc("POST /console/accounts/{id}/budget", c.authed(c.accountBudget))
	c.mux.HandleFunc("POST /console/keys/{id}/budget", c.authed(c.keyBudget))
	c.mux.HandleFunc("GET /console/catalogue", c.authed(c.cataloguePage))
	c.mux.HandleFunc("GET /console/catalogue/export", c.authed(c.catalogueExport))
	c.mux.HandleFunc("POST /console/catalogue/preview", c.authed(c.cataloguePreview))
	c.mux.HandleFunc("POST /console/catalogue/apply", c.authed(c.catalogueApply))
	c.mux.HandleFunc("POST /console/catalogue/prices", c.authed(c.setPrices))
	c.mux.HandleFunc("POST /console/catalogue/route", c.authed(c.setRoute))
	c.mux.HandleFunc("GET /console/signups", c.authed(c.signupsPage))
	c.mux.HandleFunc("POST /console/signups/{id}/{action}", c.authed(c.signupAction))
	c.mux.HandleFunc("GET /console/nodes", c.authed(c.nodesPage))
	c.mux.HandleFunc("GET /console/records", c.authed(c.recordsPage))
	c.mux.HandleFunc("GET /console/records.csv", c.authed(c.recordsCSV))
	c.mux.HandleFunc("GET /console/audit", c.authed(c.auditPage))
	c.mux.HandleFunc("GET /console/series", c.authed(c.seriesJSON))
	c.mux.HandleFunc("GET /console/models/{id...}", c.authed(c.modelPage))
	c.mux.HandleFunc("GET /console/routes/{id}", c.authed(c.routePage))
	c.mux.HandleFunc("GET /console/nodes/{id}", c.authed(c.nodePage))
	c.mux.HandleFunc("GET /console/alerts", c.authed(c.alertsPage))
	c.mux.HandleFunc("POST /console/alerts", c.authed(c.createAlert))
	c.mux.HandleFunc("POST /console/alerts/{id}/{action}", c.authed(c.alertAction))
	c.mux.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Not found.", http.StatusNotFound)
	})
}

// session is the logged-in operator of a request.
type session struct {
	token string
	adminapi.Session
}

// authed requires a live session (else it sends the browser to the login page) and, for
// a POST, the session's CSRF token in the form.
func (c *Console) authed(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ck, err := r.Cookie(sessionCookie)
		if err != nil || ck.Value == "" {
			http.Redirect(w, r, "/console/login", http.StatusSeeOther)
			return
		}
		s := &session{token: ck.Value}
		// Only a session has a CSRF token: an admin or operator token in the cookie is no login.
		if st, _ := c.api(r, s, http.MethodGet, "/admin/v1/sessions/current", nil, &s.Session); st != http.StatusOK || s.Operator == "" || s.CSRFToken == "" {
			c.clearCookie(w, sessionCookie)
			http.Redirect(w, r, "/console/login", http.StatusSeeOther)
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, 9<<20)
			if err := r.ParseMultipartForm(9 << 20); err != nil && !errors.Is(err, http.ErrNotMultipart) {
				http.Error(w, "Bad form.", http.StatusBadRequest)
				return
			}
			if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.CSRFToken)) != 1 {
				http.Error(w, "The form's CSRF token is missing or stale; reload the page.", http.StatusForbidden)
				return
			}
		}
		h(w, r, s)
	}
}

// apiError is the admin API's error envelope.
type apiError struct {
	Error struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	} `json:"error"`
}

// api calls the admin API in process as the session's operator (s nil: unauthenticated)
// and decodes a 2xx answer into out. It returns the status and, for an error, the API's
// message.
func (c *Console) api(r *http.Request, s *session, method, path string, in, out any) (int, string) {
	var body io.Reader = http.NoBody
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err.Error()
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(r.Context(), method, path, body)
	if err != nil {
		return 0, err.Error()
	}
	req.RemoteAddr = r.RemoteAddr // the login rate limit counts the browser's address
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s != nil {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	rec := &recorder{header: http.Header{}}
	c.cfg.API.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	if rec.status >= 300 {
		var e apiError
		if json.Unmarshal(rec.body.Bytes(), &e) == nil && e.Error.Message != "" {
			return rec.status, e.Error.Message
		}
		return rec.status, http.StatusText(rec.status)
	}
	if out != nil && rec.body.Len() > 0 {
		if err := json.Unmarshal(rec.body.Bytes(), out); err != nil {
			c.log.Error("console: decode admin API answer", "path", path, "err", err)
			return http.StatusInternalServerError, "The admin API's answer could not be read."
		}
	}
	return rec.status, ""
}

// recorder is the in-process response of an admin API call.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

func (c *Console) setCookie(w http.ResponseWriter, name, value string, maxAge time.Duration) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/console/", MaxAge: int(maxAge.Seconds()),
		Secure: !c.cfg.InsecureCookies, HttpOnly: true, SameSite: http.SameSiteStrictMode})
}

func (c *Console) clearCookie(w http.ResponseWriter, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/console/", MaxAge: -1,
		Secure: !c.cfg.InsecureCookies, HttpOnly: true, SameSite: http.SameSiteStrictMode})
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// page is what every template gets.
type page struct {
	Title   string
	Nav     string
	Session *session
	CSRF    string
	Notice  string // a success message
	Error   string // an error message
	Charts  bool   // the page draws the live view's charts (template "live")
	Data    any
}

func (c *Console) render(w http.ResponseWriter, status int, name string, p page) {
	t := c.pages[name]
	if t == nil {
		http.Error(w, "No such page.", http.StatusInternalServerError)
		return
	}
	if p.Session != nil {
		p.CSRF = p.Session.CSRFToken
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", p); err != nil {
		c.log.Error("console: render", "page", name, "err", err)
		http.Error(w, "The page could not be rendered.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// done sends the browser back to a page with a notice (POST, redirect, GET); failed with an
// error. The text goes in a short-lived cookie only this server sets (flashCookie), never
// in the URL: a link cannot make a console page show text of its choosing.
func (c *Console) done(w http.ResponseWriter, r *http.Request, to, notice string) {
	c.redirectFlash(w, r, to, 'n', notice)
}

func (c *Console) failed(w http.ResponseWriter, r *http.Request, to, msg string) {
	c.redirectFlash(w, r, to, 'e', msg)
}

// flashCookie carries the next page's notice or error; maxFlash bounds its text.
const (
	flashCookie = "console_flash"
	maxFlash    = 1000
)

func (c *Console) redirectFlash(w http.ResponseWriter, r *http.Request, to string, kind byte, text string) {
	if len(text) > maxFlash {
		text = text[:maxFlash]
	}
	c.setCookie(w, flashCookie, base64.RawURLEncoding.EncodeToString(append([]byte{kind}, text...)), time.Minute)
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// flash moves the notice or error of the last redirect onto p, and clears it. The query
// string's error and notice are not read.
func (c *Console) flash(w http.ResponseWriter, r *http.Request, p *page) {
	ck, err := r.Cookie(flashCookie)
	if err != nil {
		return
	}
	c.clearCookie(w, flashCookie)
	b, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil || len(b) < 2 || len(b) > maxFlash+1 || !utf8.Valid(b[1:]) {
		return
	}
	switch b[0] {
	case 'n':
		p.Notice = string(b[1:])
	case 'e':
		p.Error = string(b[1:])
	}
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	tok := randomToken()
	c.setCookie(w, loginCookie, tok, 30*time.Minute)
	p := page{Title: "Log in", CSRF: tok, Data: c.oidcLabel()}
	c.flash(w, r, &p)
	c.render(w, http.StatusOK, "login", p)
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	ck, err := r.Cookie(loginCookie)
	if err != nil || r.ParseForm() != nil || subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(ck.Value)) != 1 {
		c.failed(w, r, "/console/login", "The login form expired; try again.")
		return
	}
	var s adminapi.Session
	st, msg := c.api(r, nil, http.MethodPost, "/admin/v1/sessions",
		adminapi.LoginRequest{Name: r.PostFormValue("name"), Password: r.PostFormValue("password")}, &s)
	if st != http.StatusCreated {
		c.failed(w, r, "/console/login", msg)
		return
	}
	c.clearCookie(w, loginCookie)
	c.setCookie(w, sessionCookie, s.Token, time.Until(s.ExpiresAt))
	http.Redirect(w, r, "/console/accounts", http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session) {
	c.api(r, s, http.MethodDelete, "/admin/v1/sessions/current", nil, nil)
	c.clearCookie(w, sessionCookie)
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
}
