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
	"github.com/sekgate/gateway/controlplane/oidclogin"
	"github.com/sekgate/gateway/controlplane/signup"
	"github.com/sekgate/gateway/controlplane/store"
)

// OIDC is what the API needs of console sign-in through an OIDC provider
// (*oidclogin.Provider).
type OIDC interface {
	Exchange(ctx context.Context, code, verifier, nonce string) (oidclogin.Identity, error)
}

// oidcLogin is POST /admin/v1/sessions/oidc: the code is redeemed and the ID token
// verified; the operator with the provider's verified email signs in, or is made (named
// after the email) when its domain or claims give it a role. A role mapped from the claims
// replaces the operator's own. Making an operator or changing its role is audited.
func (s *server) oidcLogin(w http.ResponseWriter, r *http.Request) {
	if s.cfg.OIDC == nil {
		writeError(w, httpjson.ErrNoOIDC)
		return
	}
	var in adminapi.OIDCLoginRequest
	if !decodeJSON(w, r, 16<<10, &in) {
		return
	}
	if in.Code == "" || len(in.Code) > 4096 || len(in.CodeVerifier) < 43 || len(in.CodeVerifier) > 128 || len(in.Nonce) < 16 || len(in.Nonce) > 256 {
		writeError(w, invalid("code", "code, code_verifier (43 to 128 characters) and nonce (16 to 256) are required."))
		return
	}
	if ok, wait := s.logins.allow(s.now(), "addr:"+signup.RateKey(r.RemoteAddr)); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int((wait+time.Second-1)/time.Second))))
		writeError(w, httpjson.ErrLoginRateLimited)
		return
	}
	id, err := s.cfg.OIDC.Exchange(r.Context(), in.Code, in.CodeVerifier, in.Nonce)
	if err != nil {
		s.log.Warn("OIDC sign-in refused", "err", err, "client", r.RemoteAddr)
		aerr := httpjson.ErrOIDCFailed
		if errors.Is(err, oidclogin.ErrRefused) {
			aerr = httpjson.ErrOIDCRefused
		}
		writeError(w, aerr)
		s.auditFailure(r, "POST /admin/v1/sessions/oidc", aerr.Status, map[string]string{"refused": err.Error()})
		return
	}
	o, ok := s.oidcOperator(w, r, id)
	if !ok {
		return
	}
	tok, sess, err := s.cfg.Store.CreateSessionVia(r.Context(), o.Name, store.SessionOIDC, SessionTTL)
	if err != nil {
		s.storeError(w, r, err, "operator")
		return
	}
	s.log.Info("operator signed in through OIDC", "name", o.Name, "role", o.Role, "email", id.Email)
	writeJSON(w, http.StatusCreated, toSessionJSON(tok, sess))
}

// oidcOperator finds the operator of an OIDC identity by email, makes it, or changes its
// role to the mapped one; it writes the refusal itself.
func (s *server) oidcOperator(w http.ResponseWriter, r *http.Request, id oidclogin.Identity) (store.Operator, bool) {
	o, err := s.cfg.Store.GetOperatorByEmail(r.Context(), id.Email)
	switch {
	case errors.Is(err, store.ErrNotFound) && id.NewRole == "":
		s.oidcRefuse(w, r, id, "no role for a new operator")
		return o, false
	case errors.Is(err, store.ErrNotFound):
		made, err := s.makeOIDCOperator(r.Context(), id)
		if err != nil {
			s.storeError(w, r, err, "operator")
			return o, false
		}
		s.auditOIDC(r, made, nil)
		return made, true
	case err != nil:
		s.storeError(w, r, err, "operator")
		return o, false
	case o.Disabled:
		s.oidcRefuse(w, r, id, "operator "+o.Name+" is disabled")
		return o, false
	case id.Role != "" && id.Role != o.Role:
		before := o
		if o, err = s.cfg.Store.UpdateOperator(r.Context(), o.Name, store.OperatorPatch{Role: &id.Role}); err != nil {
			s.storeError(w, r, err, "operator")
			return o, false
		}
		s.auditOIDC(r, o, &before)
	}
	return o, true
}

func (s *server) oidcRefuse(w http.ResponseWriter, r *http.Request, id oidclogin.Identity, why string) {
	s.log.Warn("OIDC sign-in refused", "email", id.Email, "why", why)
	writeError(w, httpjson.ErrOIDCRefused)
	s.auditFailure(r, "POST /admin/v1/sessions/oidc", httpjson.ErrOIDCRefused.Status, map[string]string{"email": id.Email, "refused": why})
}

// makeOIDCOperator adds an operator without a password, named after the email's local
// part (with -2, -3, … when the name is taken).
func (s *server) makeOIDCOperator(ctx context.Context, id oidclogin.Identity) (store.Operator, error) {
	base := operatorNameOf(id.Email)
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			suffix := "-" + strconv.Itoa(i)
			name = base[:min(len(base), 64-len(suffix))] + suffix
		}
		o, err := s.cfg.Store.CreateOperatorWith(ctx, store.NewOperator{Name: name, Role: id.NewRole, Email: id.Email})
		if errors.Is(err, store.ErrConflict) && i < 20 {
			if o, err := s.cfg.Store.GetOperatorByEmail(ctx, id.Email); err == nil {
				return o, nil // made meanwhile by another sign-in of the same person
			}
			continue
		}
		return o, err
	}
}

// operatorNameOf is an operator name from an email's local part: lower case letters,
// digits, dots, dashes and underscores, at most 64, starting with a letter or digit.
func operatorNameOf(email string) string {
	local, _, _ := strings.Cut(strings.ToLower(email), "@")
	var b strings.Builder
	for _, c := range local {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.TrimLeft(b.String(), ".-_")
	if len(name) > 64 {
		name = name[:64]
	}
	if name == "" {
		name = "operator"
	}
	return name
}

// auditOIDC records an operator made (before nil) or whose role changed by a sign-in.
func (s *server) auditOIDC(r *http.Request, o store.Operator, before *store.Operator) {
	e := store.AuditEntry{Actor: "operator:" + o.Name, Role: o.Role, Action: "POST /admin/v1/sessions/oidc", Target: o.Name,
		Status: http.StatusCreated, Credential: store.CredentialOIDCSession}
	e.After, _ = json.Marshal(toOperatorJSON(o))
	if before != nil {
		e.Before, _ = json.Marshal(toOperatorJSON(*before))
	}
	if _, err := s.cfg.Store.AppendAudit(context.WithoutCancel(r.Context()), e); err != nil {
		s.log.Error("audit log write failed", "action", e.Action, "target", o.Name, "err", err)
	}
}
