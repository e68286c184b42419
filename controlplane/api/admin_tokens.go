package api

import (
	"errors"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/httpjson"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/apierror"
)

// tokenRoutes are the routes of operator API tokens and of who a credential is. Every
// role may make, list and revoke its own tokens; an admin lists and revokes anyone's.
func (s *server) tokenRoutes(admin func(string, http.HandlerFunc)) {
	admin("GET /admin/v1/whoami", s.whoami)
	admin("POST /admin/v1/tokens", s.createToken)
	admin("GET /admin/v1/tokens", s.listTokens)
	admin("POST /admin/v1/tokens/{id}/revoke", s.revokeToken)
}

// identifyOperatorToken authenticates an operator token. The request acts with the lesser
// of the token's role and its operator's role now, so demoting an operator demotes its
// tokens. A revoked or expired token, or one of a disabled operator, is refused; the
// identity is returned with the refusal for the audit log.
func (s *server) identifyOperatorToken(r *http.Request, secret string) (identity, *apierror.Error) {
	t, o, err := s.cfg.Store.LookupOperatorToken(r.Context(), secret)
	if errors.Is(err, store.ErrNotFound) {
		return identity{}, errUnauthenticated()
	}
	if err != nil {
		s.log.Error("operator token lookup", "err", err)
		return identity{}, httpjson.ErrUnavailable
	}
	id := identity{actor: "operator:" + o.Name, role: lesserRole(t.Role, o.Role), operator: o.Name,
		credential: store.CredentialOperatorToken, opToken: &t, opRole: o.Role}
	switch t.State(s.now()) {
	case store.TokenRevoked:
		return id, httpjson.ErrOperatorTokenRevoked
	case store.TokenExpired:
		return id, httpjson.ErrOperatorTokenExpired
	}
	if o.Disabled {
		return id, errUnauthenticated()
	}
	return id, nil
}

// failureDetail is what the audit log keeps of a refused credential: an operator token is
// named (its ID, operator and why), anything else is "invalid".
func failureDetail(aerr *apierror.Error, id identity) map[string]string {
	if id.opToken == nil {
		return map[string]string{"credential": "invalid"}
	}
	why := "operator disabled"
	switch aerr.Code {
	case apierror.CodeOperatorTokenRevoked:
		why = store.TokenRevoked
	case apierror.CodeOperatorTokenExpired:
		why = store.TokenExpired
	}
	return map[string]string{"credential": store.CredentialOperatorToken, "token_id": id.opToken.ID,
		"token_name": id.opToken.Name, "operator": id.operator, "refused": why}
}

// lesserRole returns the weaker of two roles.
func lesserRole(a, b string) string {
	if store.RoleAtLeast(a, b) {
		return b
	}
	return a
}

func (s *server) toTokenJSON(t store.OperatorToken) adminapi.OperatorToken {
	return adminapi.OperatorToken{ID: t.ID, Operator: t.Operator, Name: t.Name, Role: t.Role, State: t.State(s.now()),
		CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt, RevokedAt: t.RevokedAt, RevokedBy: t.RevokedBy,
		LastUsedAt: t.LastUsedAt}
}

// whoami is GET /admin/v1/whoami.
func (s *server) whoami(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r.Context())
	out := adminapi.Whoami{Actor: id.actor, Operator: id.operator, Role: id.role, Credential: id.credential, OperatorRole: id.opRole}
	switch {
	case id.opToken != nil:
		t := s.toTokenJSON(*id.opToken)
		out.Token, out.ExpiresAt = &t, t.ExpiresAt
	case id.token != "":
		exp := id.session.ExpiresAt.UTC()
		out.ExpiresAt = &exp
	}
	writeJSON(w, http.StatusOK, out)
}

// tokenName is what a token's name may be: a letter or digit, then up to 63 letters,
// digits, dots, dashes, underscores or spaces.
var tokenName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._ -]{0,63}$`)

// createToken is POST /admin/v1/tokens: a token of the caller's own (or, for the admin
// token, of the operator it names) with a role no higher than the caller's.
func (s *server) createToken(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r.Context())
	var in adminapi.CreateTokenRequest
	if !decodeJSON(w, r, 16<<10, &in) {
		return
	}
	owner, ownerRole := id.operator, id.role
	switch {
	case in.Operator != "" && id.credential != store.CredentialAdminToken:
		writeError(w, invalid("operator", "Only the admin token names whose token to make; an operator makes tokens of its own."))
		return
	case in.Operator != "":
		o, err := s.cfg.Store.GetOperator(r.Context(), in.Operator)
		if err != nil {
			s.storeError(w, r, err, "operator")
			return
		}
		if o.Disabled {
			writeError(w, invalid("operator", "Operator %s is disabled.", o.Name))
			return
		}
		owner, ownerRole = o.Name, o.Role
	case owner == "":
		writeError(w, httpjson.ErrAdminTokenNoOperator)
		return
	}
	role := in.Role
	if role == "" {
		role = ownerRole
	}
	name := strings.TrimSpace(in.Name)
	switch {
	case !store.ValidRole(role):
		writeError(w, invalid("role", "role must be viewer, operator or admin."))
		return
	case !store.RoleAtLeast(ownerRole, role):
		writeError(w, apierror.New(http.StatusForbidden, apierror.TypePermission, apierror.CodeRoleInsufficient,
			"A token's role cannot exceed its maker's: "+owner+" acts as "+ownerRole+" here, the token asks for "+role+"."))
		return
	case !tokenName.MatchString(name):
		writeError(w, invalid("name", "name must be 1 to 64 letters, digits, dots, dashes, underscores or spaces, starting with a letter or digit."))
		return
	case in.ExpiresAt != nil && !in.ExpiresAt.After(s.now()):
		writeError(w, invalid("expires_at", "expires_at must be in the future (RFC 3339, e.g. %s).",
			s.now().UTC().AddDate(0, 3, 0).Format(time.RFC3339)))
		return
	}
	secret, t, err := s.cfg.Store.CreateOperatorToken(r.Context(), store.NewOperatorToken{Operator: owner, Name: name, Role: role,
		CreatedBy: id.actor, ExpiresAt: utc(in.ExpiresAt)})
	if errors.Is(err, store.ErrConflict) {
		writeError(w, apierror.New(http.StatusConflict, apierror.TypeInvalidRequest, apierror.CodeConflict,
			owner+" already has a live token named "+name+"; revoke it or choose another name.").WithParam("name"))
		return
	}
	if err != nil {
		s.storeError(w, r, err, "operator")
		return
	}
	s.log.Info("operator token created", "operator", owner, "token", t.ID, "role", role, "by", id.actor)
	writeJSON(w, http.StatusCreated, adminapi.CreatedToken{OperatorToken: s.toTokenJSON(t), Secret: secret})
}

// listTokens is GET /admin/v1/tokens?operator=: the caller's own tokens; an admin's
// answer holds everyone's (or the named operator's).
func (s *server) listTokens(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r.Context())
	who := r.URL.Query().Get("operator")
	if !store.RoleAtLeast(id.role, store.RoleAdmin) {
		if who != "" && who != id.operator {
			writeError(w, httpjson.ErrOthersTokens)
			return
		}
		who = id.operator
	}
	ts, err := s.cfg.Store.ListOperatorTokens(r.Context(), who)
	if err != nil {
		s.storeError(w, r, err, "tokens")
		return
	}
	out := adminapi.List[adminapi.OperatorToken]{Data: make([]adminapi.OperatorToken, len(ts))}
	for i, t := range ts {
		out.Data[i] = s.toTokenJSON(t)
	}
	writeJSON(w, http.StatusOK, out)
}

// revokeToken is POST /admin/v1/tokens/{id}/revoke: one's own token, or anyone's for an
// admin. Revoking a revoked token changes nothing.
func (s *server) revokeToken(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r.Context())
	t, err := s.cfg.Store.GetOperatorToken(r.Context(), r.PathValue("id"))
	if err != nil {
		s.storeError(w, r, err, "token")
		return
	}
	if t.Operator != id.operator && !store.RoleAtLeast(id.role, store.RoleAdmin) {
		writeError(w, httpjson.ErrOthersTokens)
		return
	}
	if t, err = s.cfg.Store.RevokeOperatorToken(r.Context(), t.ID, id.actor); err != nil {
		s.storeError(w, r, err, "token")
		return
	}
	s.log.Info("operator token revoked", "operator", t.Operator, "token", t.ID, "by", id.actor)
	writeJSON(w, http.StatusOK, s.toTokenJSON(t))
}
