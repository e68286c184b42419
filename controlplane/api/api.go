// Package api is the control plane's HTTP surface, as two handlers for two listeners:
//
// Handlers.Admin, on the admin listener (loopback by default):
//   - /admin/v1/*: the operator's admin API (Authorization: Bearer <admin token> or an
//     operator's session token from POST /admin/v1/sessions); every route is held to a
//     role (viewer reads, operator changes, admin loads the catalogue and manages
//     operators; the admin token is an admin) and every change is appended to the audit log;
//
// Handlers.Node, on the node-facing listener (TLS, optionally mTLS):
//   - /internal/v1/*: snapshot sync, usage ingest and balance watch for data-plane nodes
//     (Authorization: Bearer <node token>, X-Node-Id);
//   - /v1/service/* and /v1/stripe/webhook: customer paths forwarded by a data-plane node
//     with its node token; the account the node authenticated comes in
//     X-Gateway-Account-Id and X-Gateway-Key-Id and is trusted only with a valid node token.
//
// /admin/v1/* on the node listener answers 404, as any unknown path. Tokens are at least
// internalapi.MinTokenBytes long and compared as SHA-256 digests in constant time, so a
// compare reveals neither their content nor their length. Every error is the interface's
// JSON envelope (shared/apierror), unknown paths included, and every response carries
// X-Request-Id (the node's, when it sent one).
package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sekgate/gateway/controlplane/httpjson"
	"github.com/sekgate/gateway/controlplane/publish"
	"github.com/sekgate/gateway/controlplane/shares"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Snapshots is what the API needs from the snapshot publisher (*publish.Publisher).
type Snapshots interface {
	Current() (*publish.Current, <-chan struct{})
	Wait(ctx context.Context, have publish.Have, wait time.Duration) *publish.Current
	BalanceSignal() <-chan struct{}
}

// Config configures the handler.
type Config struct {
	// Store is the control plane's state. Required.
	Store *store.Store
	// Snapshots serves snapshot long-polls and balance wake-ups. Required.
	Snapshots Snapshots
	// AdminToken authenticates the admin API. Required.
	AdminToken string
	// NodeTokens authenticate data-plane nodes; at least one is required.
	NodeTokens []string
	// MaxWait caps the wait of snapshot and balance long-polls (default 60 s). The server's
	// write timeout must be longer.
	MaxWait time.Duration
	// UsageWindow is the period of usage_30d (default 30 days).
	UsageWindow int
	// ServiceLimits bound /v1/service/* per key and per account (defaults in ServiceLimits).
	ServiceLimits ServiceLimits
	// DefaultLimits are the deployment's limits for accounts and keys without their own
	// (what the publisher puts in every snapshot): the admin API shows them as the
	// effective limits of those accounts and keys.
	DefaultLimits snapshot.Limits
	// Optional handlers of forwarded paths owned by other packages; nil leaves the path
	// answering 404. They run behind the node-token check.
	Topup   http.Handler // POST /v1/service/topup (account in X-Gateway-Account-Id)
	Signup  http.Handler // /v1/service/signup
	Webhook http.Handler // /v1/stripe/webhook
	// Admin mounts further admin routes (patterns relative to the mux, e.g.
	// "GET /admin/v1/signups"); they run behind the admin-token check.
	Admin map[string]http.Handler
	// OIDC, when set, signs operators in through an OIDC provider (POST
	// /admin/v1/sessions/oidc, which the console's callback calls).
	OIDC OIDC
	// TestBox, when set, serves the console's test box: POST
	// /admin/v1/accounts/{id}/test-box sends a chat request on behalf of an account.
	TestBox TestBox
	// Fleet keeps the nodes' fleet reports (POST /internal/v1/fleet); default: a table of
	// its own on the API's clock and logger.
	Fleet *shares.Table
	// Logger (default slog.Default()) and clock (default time.Now).
	Logger *slog.Logger
	Now    func() time.Time
}

type server struct {
	cfg         Config
	log         *slog.Logger
	now         func() time.Time
	adminDigest [sha256.Size]byte
	nodeDigests [][sha256.Size]byte
	spool       spoolReports
	logins      *buckets // login attempts per address and name (admin_auth.go)
	failAudit   *buckets // audit rows of failed authentications per address
	failAll     *buckets // and in all
	service     *serviceLimiter
}

// surface is one listener's handler: the shared server and its own routes.
type surface struct {
	*server
	mux *http.ServeMux
}

// Handlers are the control plane's two HTTP surfaces.
type Handlers struct {
	// Node serves nodes: /internal/v1/*, forwarded customer paths and /healthz.
	Node http.Handler
	// Admin serves the admin API (/admin/v1/*) and /healthz.
	Admin http.Handler
}

// New validates cfg and returns the control plane's HTTP handlers.
func New(cfg Config) (*Handlers, error) {
	if cfg.Store == nil || cfg.Snapshots == nil {
		return nil, errors.New("api: store and snapshots are required")
	}
	if err := CheckToken("admin token", cfg.AdminToken); err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	var tokens []string
	for _, t := range cfg.NodeTokens {
		if t = strings.TrimSpace(t); t != "" {
			if err := CheckToken("node token", t); err != nil {
				return nil, fmt.Errorf("api: %w", err)
			}
			tokens = append(tokens, t)
		}
	}
	if len(tokens) == 0 {
		return nil, errors.New("api: at least one node token is required")
	}
	cfg.NodeTokens = tokens
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 60 * time.Second
	}
	if cfg.UsageWindow <= 0 {
		cfg.UsageWindow = 30
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Fleet == nil {
		cfg.Fleet = shares.New(shares.Config{Now: cfg.Now, Logger: cfg.Logger})
	}
	s := &server{cfg: cfg, log: cfg.Logger, now: cfg.Now, adminDigest: sha256.Sum256([]byte(cfg.AdminToken)),
		service: newServiceLimiter(cfg.ServiceLimits), logins: newLoginLimiter(), failAudit: newFailAuditLimiter(),
		failAll: newBuckets(1, failAuditAllPerMinute/60.0, failAuditAllPerMinute)}
	for _, t := range tokens {
		s.nodeDigests = append(s.nodeDigests, sha256.Sum256([]byte(t)))
	}
	node, admin := &surface{server: s, mux: http.NewServeMux()}, &surface{server: s, mux: http.NewServeMux()}
	s.adminRoutes(admin.mux)
	s.nodeRoutes(node.mux)
	for _, x := range []*surface{node, admin} {
		// Liveness for supervisors and the local stack: no token, no database round trip
		// (migrations have run before the listeners open).
		x.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte("ok"))
		})
		x.mux.HandleFunc("/", x.notFoundOrNotAllowed)
	}
	return &Handlers{Node: node, Admin: admin}, nil
}

// CheckToken refuses a token shorter than internalapi.MinTokenBytes or with white space or
// control characters (it travels in an Authorization header).
func CheckToken(what, t string) error {
	if len(t) < internalapi.MinTokenBytes {
		return fmt.Errorf("%s must be at least %d bytes (it has %d)", what, internalapi.MinTokenBytes, len(t))
	}
	for i := 0; i < len(t); i++ {
		if t[i] <= ' ' || t[i] == 0x7f {
			return fmt.Errorf("%s contains white space or a control character", what)
		}
	}
	return nil
}

func (s *server) adminRoutes(mux *http.ServeMux) {
	// Every admin route is authenticated (admin token or operator session), held to its
	// role, and audited when it changes anything (guard).
	admin := func(pattern string, h http.HandlerFunc) { mux.Handle(pattern, s.guard(pattern, h)) }
	mux.HandleFunc("POST /admin/v1/sessions", s.login)
	mux.HandleFunc("POST /admin/v1/sessions/oidc", s.oidcLogin)
	mux.HandleFunc("GET /admin/v1/openapi.json", s.adminOpenAPI)
	s.operatorRoutes(admin)
	admin("POST /admin/v1/accounts", s.createAccount)
	admin("GET /admin/v1/accounts", s.listAccounts)
	admin("GET /admin/v1/accounts/{id}", s.getAccount)
	admin("PATCH /admin/v1/accounts/{id}", s.patchAccount)
	admin("POST /admin/v1/accounts/{id}/credits", s.addCredit)
	admin("POST /admin/v1/accounts/{id}/keys", s.createKey)
	admin("GET /admin/v1/accounts/{id}/keys", s.listKeys)
	admin("POST /admin/v1/keys/{id}/revoke", s.revokeKey)
	admin("PATCH /admin/v1/keys/{id}", s.patchKey)
	admin("POST /admin/v1/accounts/{id}/models", s.enableModels)
	admin("DELETE /admin/v1/accounts/{id}/models/{model...}", s.disableModel)
	admin("GET /admin/v1/models", s.listModels)
	admin("PATCH /admin/v1/models/{id}", s.patchModel)
	admin("GET /admin/v1/routes", s.listRoutes)
	admin("PATCH /admin/v1/routes/{id}", s.patchRoute)
	admin("GET /admin/v1/catalog", s.getCatalog)
	admin("PUT /admin/v1/catalog", s.putCatalog)
	admin("GET /admin/v1/nodes", s.listNodes)
	admin("GET /admin/v1/overview", s.overview)
	admin("GET /admin/v1/series", s.series)
	admin("GET /admin/v1/accounts/{id}/refusals", s.listRefusals)
	admin("GET /admin/v1/snapshot", s.snapshotInfo)
	admin("GET /admin/v1/rejected-records", s.listRejected)
	s.budgetRoutes(admin)
	s.alertRoutes(admin)
	for p, h := range s.cfg.Admin {
		mux.Handle(p, s.guard(p, h.ServeHTTP))
	}
}

func (s *server) nodeRoutes(mux *http.ServeMux) {
	node := func(pattern string, h http.HandlerFunc) { mux.Handle(pattern, s.nodeAuth(h)) }
	node("GET "+internalapi.PathSnapshot, s.getSnapshot)
	node("POST "+internalapi.PathUsage, s.postUsage)
	node("POST "+internalapi.PathRefusals, s.postRefusals)
	node("GET "+internalapi.PathBalances, s.getBalances)
	node("POST "+internalapi.PathFleet, s.postFleet)

	node("GET /v1/service/account", s.limited(serviceRead, s.serviceAccount))
	node("GET /v1/service/requests", s.limited(serviceRead, s.serviceRequests))
	node("GET /v1/service/requests/{id}", s.limited(serviceRead, s.serviceRequest))
	if s.cfg.Topup != nil {
		node("POST /v1/service/topup", s.limited(serviceTopup, s.cfg.Topup.ServeHTTP))
	}
	if s.cfg.Signup != nil {
		node("/v1/service/signup", s.cfg.Signup.ServeHTTP)
	}
	if s.cfg.Webhook != nil {
		node("/v1/stripe/webhook", s.cfg.Webhook.ServeHTTP)
	}
}

// ServeHTTP sets X-Request-Id, recovers panics and turns the mux's own plain-text
// answers (405 with Allow) into JSON errors.
func (s *surface) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(internalapi.HeaderRequestID)
	if id == "" || len(id) > 200 {
		id = newRequestID()
	}
	w.Header().Set(internalapi.HeaderRequestID, id)
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("handler panic", "path", r.URL.Path, "panic", v)
			writeError(w, httpjson.ErrInternal)
		}
	}()
	if _, pattern := s.mux.Handler(r); pattern == "" { // the mux's own answer, e.g. a redirect
		s.mux.ServeHTTP(&jsonErrorWriter{ResponseWriter: w}, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// notFoundOrNotAllowed answers paths only the catch-all matched: 405 with Allow when the
// path exists for other methods, else 404 endpoint_not_found.
func (s *surface) notFoundOrNotAllowed(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, httpjson.ErrMethodNotAllowed)
		return
	}
	writeError(w, httpjson.ErrEndpointNotFound)
}

// jsonErrorWriter replaces the body of error answers written by the mux with the envelope.
type jsonErrorWriter struct {
	http.ResponseWriter
	swallow bool
}

func (j *jsonErrorWriter) WriteHeader(code int) {
	if code < 400 {
		j.ResponseWriter.WriteHeader(code)
		return
	}
	j.swallow = true
	e := apierror.New(code, apierror.TypeInvalidRequest, "", http.StatusText(code)+".")
	if code == http.StatusMethodNotAllowed {
		e = httpjson.ErrMethodNotAllowed
	}
	j.ResponseWriter.Header().Del("X-Content-Type-Options")
	writeError(j.ResponseWriter, e)
}

func (j *jsonErrorWriter) Write(b []byte) (int, error) {
	if j.swallow {
		return len(b), nil
	}
	return j.ResponseWriter.Write(b)
}

func newRequestID() string {
	var b [12]byte
	rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const p = "Bearer "
	if len(h) <= len(p) || !strings.EqualFold(h[:len(p)], p) {
		return "", false
	}
	return strings.TrimSpace(h[len(p):]), true
}

// tokenMatches compares the digest of the presented token with a configured digest: the
// time taken depends on neither token's content nor length.
func tokenMatches(tok string, want *[sha256.Size]byte) bool {
	got := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

func (s *server) nodeAuth(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := bearer(r)
		valid := false
		if ok {
			got := sha256.Sum256([]byte(tok))
			for i := range s.nodeDigests {
				if subtle.ConstantTimeCompare(got[:], s.nodeDigests[i][:]) == 1 {
					valid = true // no early exit: compare against every token
				}
			}
		}
		if !valid {
			writeError(w, httpjson.ErrInvalidNodeToken)
			return
		}
		w.Header().Set(internalapi.HeaderProtocol, cpProtocol)
		v, err := internalapi.ParseProtocol(r.Header.Get(internalapi.HeaderProtocol))
		if err != nil {
			writeError(w, invalid(internalapi.HeaderProtocol, "%s", err.Error()))
			return
		}
		if !internalapi.NodeProtocolSupported(v) {
			writeError(w, apierror.New(http.StatusUpgradeRequired, apierror.TypeInvalidRequest, apierror.CodeProtocolUnsupported,
				fmt.Sprintf("This control plane serves nodes of internal protocol %d to %d; this node speaks %d. %s",
					internalapi.MinProtocolVersion, internalapi.ProtocolVersion, v, upgradeAdvice(v))))
			return
		}
		h(w, r)
	})
}

// cpProtocol is this build's internal API version as sent on every answer to a node.
var cpProtocol = strconv.Itoa(internalapi.ProtocolVersion)

func upgradeAdvice(v int) string {
	if v > internalapi.ProtocolVersion {
		return "Upgrade the control plane first (docs/upgrades.md)."
	}
	return "Upgrade the node (docs/upgrades.md)."
}
