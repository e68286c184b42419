package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/httpjson"
	"github.com/sekgate/gateway/controlplane/password"
	"github.com/sekgate/gateway/controlplane/signup"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/apierror"
)

// SessionTTL is how long an operator session lasts.
const SessionTTL = 12 * time.Hour

// identity is who made an admin request: the static admin token (an admin), an
// operator's session or an operator's API token.
type identity struct {
	actor      string // "token" or "operator:<name>"
	role       string // the role the request acts with
	operator   string // empty for the admin token
	credential string // store.Credential*
	session    store.Session
	token      string // the session token (empty for the admin token and operator tokens)
	opToken    *store.OperatorToken
	opRole     string // the operator's own role
}

type identityKey struct{}

func identityOf(ctx context.Context) identity {
	id, _ := ctx.Value(identityKey{}).(identity)
	return id
}

// requiredRole is the least role that may call a route: reads need a viewer, changes an
// operator, the catalogue (prices included) and operator management an admin. A route's
// weight, priority and state are an operator's to change. Ending one's own session needs
// only a viewer.
func requiredRole(pattern string) string {
	method, path, _ := strings.Cut(pattern, " ")
	switch {
	case method == http.MethodGet || method == http.MethodHead:
		return store.RoleViewer
	case path == "/admin/v1/sessions/current" || strings.HasPrefix(path, "/admin/v1/tokens"):
		return store.RoleViewer // one's own session and tokens (admin_tokens.go checks whose)
	case path == "/admin/v1/catalog" || path == "/admin/v1/models/{id}" || strings.HasPrefix(path, "/admin/v1/operators"):
		return store.RoleAdmin
	}
	return store.RoleOperator
}

func errUnauthenticated() *apierror.Error { return httpjson.ErrAdminAuthRequired }

// identify authenticates the bearer token: the admin token, an operator token, or a live
// session token.
func (s *server) identify(r *http.Request) (identity, *apierror.Error) {
	tok, ok := bearer(r)
	if !ok {
		return identity{}, errUnauthenticated()
	}
	if tokenMatches(tok, &s.adminDigest) {
		return identity{actor: "token", role: store.RoleAdmin, credential: store.CredentialAdminToken}, nil
	}
	if len(tok) > 100 {
		return identity{}, errUnauthenticated()
	}
	if strings.HasPrefix(tok, store.OperatorTokenPrefix) {
		return s.identifyOperatorToken(r, tok)
	}
	if !strings.HasPrefix(tok, store.SessionTokenPrefix) {
		return identity{}, errUnauthenticated()
	}
	sess, err := s.cfg.Store.LookupSession(r.Context(), tok)
	if errors.Is(err, store.ErrNotFound) {
		return identity{}, errUnauthenticated()
	}
	if err != nil {
		s.log.Error("session lookup", "err", err)
		return identity{}, httpjson.ErrUnavailable
	}
	cred := store.CredentialSession
	if sess.Via == store.SessionOIDC {
		cred = store.CredentialOIDCSession
	}
	return identity{actor: "operator:" + sess.Operator.Name, role: sess.Operator.Role, operator: sess.Operator.Name,
		credential: cred, session: sess, token: tok, opRole: sess.Operator.Role}, nil
}

// dryRunnable are the change routes that honour ?dry_run=true: checked, not done, and so
// not audited. Any other route is audited whatever its query says.
var dryRunnable = map[string]bool{"PUT /admin/v1/catalog": true}

// guard authenticates an admin route, enforces its role and sends every change (any
// method but GET and HEAD, a dry run aside) to the audit log, refused ones included.
func (s *server) guard(pattern string, h http.HandlerFunc) http.Handler {
	need := requiredRole(pattern)
	method, _, _ := strings.Cut(pattern, " ")
	change := method != http.MethodGet && method != http.MethodHead
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, aerr := s.identify(r)
		if aerr != nil {
			writeError(w, aerr)
			if _, presented := bearer(r); presented && aerr.Status == http.StatusUnauthorized {
				s.auditFailure(r, pattern, aerr.Status, failureDetail(aerr, id))
			}
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), identityKey{}, id))
		run := h
		if !store.RoleAtLeast(id.role, need) {
			run = func(w http.ResponseWriter, _ *http.Request) {
				writeError(w, apierror.New(http.StatusForbidden, apierror.TypePermission, apierror.CodeRoleInsufficient,
					"This needs the "+need+" role; "+id.actor+" has "+id.role+"."))
			}
		}
		if change && !(dryRunnable[pattern] && isDryRun(r)) { // a dry run changes nothing: not audited
			run = s.audited(pattern, run)
		}
		run(w, r)
	})
}

// Login attempts: 10 at once, then 10 a minute, per client address and per operator name,
// in a table of at most loginKeys keys (buckets: the least recently used key makes room,
// nothing is ever cleared at once). A name's bucket is consulted only when the address
// has a token, so refused attempts add no names.
const (
	loginBurst = 10
	loginKeys  = 20_000
)

func newLoginLimiter() *buckets { return newBuckets(loginKeys, 1.0/6, loginBurst) }

// Failed authentications (bad logins, bad admin tokens) go to the audit log at most
// failAuditBurst at once and failAuditPerMinute a minute per client address, and
// failAuditAllPerMinute a minute in all, so a flood cannot grow the append-only log
// without bound; the rest is only logged.
const (
	failAuditBurst        = 5
	failAuditPerMinute    = 5
	failAuditAllPerMinute = 120
)

func newFailAuditLimiter() *buckets {
	return newBuckets(loginKeys, failAuditPerMinute/60.0, failAuditBurst)
}

// auditFailure appends a failed authentication to the audit log (within the limits
// above): actor "anonymous", the action, the client address as target, the status.
func (s *server) auditFailure(r *http.Request, action string, status int, detail map[string]string) {
	addr := signup.RateKey(r.RemoteAddr)
	if ok, _ := s.failAll.allow(s.now(), "all"); !ok {
		s.log.Warn("failed authentication not audited (limit)", "action", action, "client", r.RemoteAddr)
		return
	}
	if ok, _ := s.failAudit.allow(s.now(), "addr:"+addr); !ok {
		s.log.Warn("failed authentication not audited (limit)", "action", action, "client", r.RemoteAddr)
		return
	}
	req, _ := json.Marshal(detail)
	e := store.AuditEntry{Actor: "anonymous", Action: action, Target: "client:" + addr, Status: status, Request: req}
	if _, err := s.cfg.Store.AppendAudit(context.WithoutCancel(r.Context()), e); err != nil {
		s.log.Error("audit log write failed", "action", action, "err", err)
	}
}

func toSessionJSON(token string, sess store.Session) adminapi.Session {
	return adminapi.Session{Token: token, CSRFToken: sess.CSRF, Operator: sess.Operator.Name, Role: sess.Operator.Role,
		ExpiresAt: sess.ExpiresAt.UTC()}
}

// login starts an operator session: POST /admin/v1/sessions {name, password}.
func (s *server) login(w http.ResponseWriter, r *http.Request) {
	var in adminapi.LoginRequest
	if !decodeJSON(w, r, 16<<10, &in) {
		return
	}
	// The admin listener is not behind the data plane: the connection's address counts,
	// never an X-Forwarded-For header a client could make up.
	name := in.Name
	if len(name) > 64 { // no operator name is longer; the limiter's keys stay small
		name = name[:64]
	}
	if ok, wait := s.logins.allow(s.now(), "addr:"+signup.RateKey(r.RemoteAddr), "name:"+name); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int((wait+time.Second-1)/time.Second))))
		writeError(w, httpjson.ErrLoginRateLimited)
		s.auditFailure(r, "POST /admin/v1/sessions", http.StatusTooManyRequests, map[string]string{"name": name})
		return
	}
	o, err := s.cfg.Store.GetOperator(r.Context(), in.Name)
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrInvalid) {
		s.storeError(w, r, err, "operator")
		return
	}
	// The hash is checked even for an unknown name, so timing does not tell names apart.
	if !password.Check(o.PasswordHash, in.Password) || o.Disabled {
		s.log.Warn("operator login refused", "name", in.Name, "client", r.RemoteAddr)
		writeError(w, httpjson.ErrInvalidCredentials)
		s.auditFailure(r, "POST /admin/v1/sessions", http.StatusUnauthorized, map[string]string{"name": name})
		return
	}
	tok, sess, err := s.cfg.Store.CreateSession(r.Context(), o.Name, SessionTTL)
	if err != nil {
		s.storeError(w, r, err, "operator")
		return
	}
	s.log.Info("operator logged in", "name", o.Name, "role", o.Role)
	writeJSON(w, http.StatusCreated, toSessionJSON(tok, sess))
}

func (s *server) currentSession(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r.Context())
	if id.token == "" { // the admin token or an operator token: no session
		writeJSON(w, http.StatusOK, adminapi.Session{Operator: id.operator, Role: id.role})
		return
	}
	writeJSON(w, http.StatusOK, toSessionJSON("", id.session))
}

func (s *server) logout(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r.Context())
	if id.token == "" {
		writeError(w, invalid("session", "This credential is no session: the admin token never ends, an operator token is revoked (POST /admin/v1/tokens/{id}/revoke)."))
		return
	}
	if err := s.cfg.Store.DeleteSession(r.Context(), id.token); err != nil {
		s.storeError(w, r, err, "session")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// operatorEmail checks an operator's email ("" for none) and returns it in lower case. It
// writes the 400 itself when it is not an address.
func operatorEmail(w http.ResponseWriter, e string) (string, bool) {
	e = strings.ToLower(strings.TrimSpace(e))
	if e == "" {
		return "", true
	}
	local, domain, ok := strings.Cut(e, "@")
	if !ok || local == "" || domain == "" || strings.ContainsAny(e, " \t\r\n") || strings.Count(e, "@") != 1 || len(e) > 254 {
		writeError(w, invalid("email", "email must be an address such as ada@example.com."))
		return "", false
	}
	return e, true
}

func toOperatorJSON(o store.Operator) adminapi.Operator {
	return adminapi.Operator{Name: o.Name, Role: o.Role, Email: o.Email, Disabled: o.Disabled, CreatedAt: o.CreatedAt.UTC()}
}

func (s *server) createOperator(w http.ResponseWriter, r *http.Request) {
	var in adminapi.CreateOperatorRequest
	if !decodeJSON(w, r, 16<<10, &in) {
		return
	}
	if !store.ValidRole(in.Role) {
		writeError(w, invalid("role", "role must be viewer, operator or admin."))
		return
	}
	email, ok := operatorEmail(w, in.Email)
	if !ok {
		return
	}
	var hash string
	if in.Password != "" || email == "" { // an operator without an email signs in with a password
		var err error
		if hash, err = password.Hash(in.Password); err != nil {
			writeError(w, invalid("password", "%s.", err.Error()))
			return
		}
	}
	o, err := s.cfg.Store.CreateOperatorWith(r.Context(), store.NewOperator{Name: in.Name, Role: in.Role, PasswordHash: hash, Email: email})
	if errors.Is(err, store.ErrConflict) && email != "" {
		writeError(w, apierror.New(http.StatusConflict, apierror.TypeInvalidRequest, apierror.CodeConflict,
			"An operator with this name or email exists already: "+in.Name+", "+email+"."))
		return
	}
	if errors.Is(err, store.ErrInvalid) {
		writeError(w, invalid("name", "name must be 1 to 64 lowercase letters, digits, dots, dashes or underscores."))
		return
	}
	if err != nil {
		s.storeError(w, r, err, "operator")
		return
	}
	writeJSON(w, http.StatusCreated, toOperatorJSON(o))
}

func (s *server) listOperators(w http.ResponseWriter, r *http.Request) {
	ops, err := s.cfg.Store.ListOperators(r.Context())
	if err != nil {
		s.storeError(w, r, err, "operators")
		return
	}
	out := adminapi.List[adminapi.Operator]{Data: make([]adminapi.Operator, len(ops))}
	for i, o := range ops {
		out.Data[i] = toOperatorJSON(o)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) patchOperator(w http.ResponseWriter, r *http.Request) {
	var in adminapi.PatchOperatorRequest
	if !decodeJSON(w, r, 16<<10, &in) {
		return
	}
	p := store.OperatorPatch{Role: in.Role, Disabled: in.Disabled}
	if in.Email != nil {
		email, ok := operatorEmail(w, *in.Email)
		if !ok {
			return
		}
		p.Email = &email
	}
	if in.Role != nil && !store.ValidRole(*in.Role) {
		writeError(w, invalid("role", "role must be viewer, operator or admin."))
		return
	}
	if in.Password != nil {
		hash, err := password.Hash(*in.Password)
		if err != nil {
			writeError(w, invalid("password", "%s.", err.Error()))
			return
		}
		p.PasswordHash = &hash
	}
	o, err := s.cfg.Store.UpdateOperator(r.Context(), r.PathValue("name"), p)
	if err != nil {
		s.storeError(w, r, err, "operator")
		return
	}
	writeJSON(w, http.StatusOK, toOperatorJSON(o))
}
