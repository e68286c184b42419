package api_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/api"
)

// makeToken makes an operator token with the credential cred and returns it.
func (e *env) makeToken(cred string, in adminapi.CreateTokenRequest) adminapi.CreatedToken {
	e.t.Helper()
	var ct adminapi.CreatedToken
	e.mustStatus(e.do("POST", "/admin/v1/tokens", cred, in, nil), 201).json(e.t, &ct)
	if !strings.HasPrefix(ct.Secret, adminapi.OperatorTokenPrefix) || len(ct.Secret) != 68 || ct.State != "active" {
		e.t.Fatalf("created token %+v", ct)
	}
	return ct
}

// An operator token acts as its operator with its role, and every change it makes is
// audited with the operator and the token's name; the admin token is audited as the
// break-glass credential.
func TestOperatorTokenActsAsItsOperator(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	otto := e.login("otto", "operator")
	ct := e.makeToken(otto, adminapi.CreateTokenRequest{Name: "ci deploy"})
	if ct.Operator != "otto" || ct.Role != "operator" || ct.CreatedBy != "operator:otto" || ct.ExpiresAt != nil {
		t.Fatalf("token %+v", ct)
	}

	var who adminapi.Whoami
	e.mustStatus(e.do("GET", "/admin/v1/whoami", ct.Secret, nil, nil), 200).json(t, &who)
	if who.Operator != "otto" || who.Role != "operator" || who.Credential != "operator_token" || who.Token == nil || who.Token.Name != "ci deploy" {
		t.Fatalf("whoami %+v", who)
	}
	var adm adminapi.Whoami
	e.mustStatus(e.admin("GET", "/admin/v1/whoami", nil), 200).json(t, &adm)
	if adm.Actor != "token" || adm.Operator != "" || adm.Role != "admin" || adm.Credential != "admin_token" {
		t.Fatalf("whoami of the admin token %+v", adm)
	}

	var a struct{ ID string }
	e.mustStatus(e.do("POST", "/admin/v1/accounts", ct.Secret, map[string]string{"customer": "Token AB", "residency": "se"}, nil), 201).json(t, &a)
	got := e.lastAudit(t, a.ID)
	if got.Actor != "operator:otto" || got.Role != "operator" || got.Credential != "operator_token" || got.TokenID != ct.ID || got.TokenName != "ci deploy" {
		t.Fatalf("audit entry of the token's change: %+v", got)
	}
	// The secret never reaches the audit log.
	made := e.lastAudit(t, ct.ID)
	if strings.Contains(string(made.After), ct.Secret) || made.Credential != "session" || made.Actor != "operator:otto" {
		t.Fatalf("audit entry of the token's creation: %+v %s", made, made.After)
	}
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+a.ID+"/credits", map[string]string{"amount_sek": "1.00"}), 200)
	if got := e.lastAudit(t, a.ID); got.Actor != "token" || got.Credential != "admin_token" || got.TokenID != "" {
		t.Fatalf("audit entry of the admin token: %+v", got)
	}
}

// A token's role never exceeds its maker's (when made, and on use when the operator is
// demoted), and a viewer's token changes nothing.
func TestOperatorTokenRoleBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	vera, otto := e.login("vera", "viewer"), e.login("otto", "operator")

	tests := []struct {
		name, cred, role string
		want             int
	}{
		{"viewer asks for operator", vera, "operator", 403},
		{"viewer asks for admin", vera, "admin", 403},
		{"operator asks for admin", otto, "admin", 403},
		{"operator asks for viewer", otto, "viewer", 201},
		{"unknown role", otto, "root", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do("POST", "/admin/v1/tokens", tt.cred, adminapi.CreateTokenRequest{Name: tt.name, Role: tt.role}, nil)
			if r.status != tt.want {
				t.Fatalf("status %d, want %d: %s", r.status, tt.want, r.body)
			}
		})
	}
	// A token made by a viewer-role token stays a viewer's.
	low := e.makeToken(otto, adminapi.CreateTokenRequest{Name: "reader", Role: "viewer"})
	e.mustStatus(e.do("POST", "/admin/v1/tokens", low.Secret, adminapi.CreateTokenRequest{Name: "escalate", Role: "operator"}, nil), 403)

	vt := e.makeToken(vera, adminapi.CreateTokenRequest{Name: "dash"})
	if vt.Role != "viewer" {
		t.Fatalf("a viewer's token has role %s", vt.Role)
	}
	changes := []struct{ method, path string }{
		{"POST", "/admin/v1/accounts"},
		{"PUT", "/admin/v1/catalog"},
		{"POST", "/admin/v1/operators"},
	}
	for _, c := range changes {
		if r := e.do(c.method, c.path, vt.Secret, map[string]string{"customer": "X", "residency": "se"}, nil); r.status != 403 {
			t.Errorf("viewer token %s %s: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	e.mustStatus(e.do("GET", "/admin/v1/accounts", vt.Secret, nil, nil), 200)

	// Demoting the operator demotes its tokens.
	ot := e.makeToken(otto, adminapi.CreateTokenRequest{Name: "ops"})
	e.mustStatus(e.admin("PATCH", "/admin/v1/operators/otto", map[string]string{"role": "viewer"}), 200)
	r := e.do("POST", "/admin/v1/accounts", ot.Secret, map[string]string{"customer": "X", "residency": "se"}, nil)
	if r.status != 403 {
		t.Fatalf("a demoted operator's token: %d %s", r.status, r.body)
	}
	var who adminapi.Whoami
	e.mustStatus(e.do("GET", "/admin/v1/whoami", ot.Secret, nil, nil), 200).json(t, &who)
	if who.Role != "viewer" || who.OperatorRole != "viewer" || who.Token.Role != "operator" {
		t.Fatalf("whoami of a demoted operator's token %+v", who)
	}
}

// Revoked and expired tokens, and tokens of a disabled operator, answer 401; only the
// owner or an admin revokes a token.
func TestOperatorTokenRevocationAndExpiry(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64 // the API's clock runs ahead of the wall clock by this
	e := newEnvWith(t, func(c *api.Config) {
		c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	})
	otto, ada, vera := e.login("otto", "operator"), e.login("ada", "admin"), e.login("vera", "viewer")
	exp := time.Now().Add(time.Hour)
	short := e.makeToken(otto, adminapi.CreateTokenRequest{Name: "short", ExpiresAt: &exp})
	keep := e.makeToken(otto, adminapi.CreateTokenRequest{Name: "keep"})
	mine := e.makeToken(otto, adminapi.CreateTokenRequest{Name: "mine"})

	// Another operator who is not an admin neither sees nor revokes them.
	e.mustStatus(e.do("POST", "/admin/v1/tokens/"+mine.ID+"/revoke", vera, nil, nil), 403)
	e.mustStatus(e.do("GET", "/admin/v1/tokens?operator=otto", vera, nil, nil), 403)
	var l adminapi.List[adminapi.OperatorToken]
	e.mustStatus(e.do("GET", "/admin/v1/tokens", vera, nil, nil), 200).json(t, &l)
	if len(l.Data) != 0 {
		t.Fatalf("vera sees %d tokens", len(l.Data))
	}
	// An admin sees everyone's and revokes them.
	e.mustStatus(e.do("GET", "/admin/v1/tokens", ada, nil, nil), 200).json(t, &l)
	if len(l.Data) != 3 || l.Data[0].Operator != "otto" {
		t.Fatalf("ada sees %+v", l.Data)
	}
	var rv adminapi.OperatorToken
	e.mustStatus(e.do("POST", "/admin/v1/tokens/"+mine.ID+"/revoke", ada, nil, nil), 200).json(t, &rv)
	if rv.State != "revoked" || rv.RevokedBy != "operator:ada" {
		t.Fatalf("revoked %+v", rv)
	}
	r := e.do("GET", "/admin/v1/accounts", mine.Secret, nil, nil)
	if _, code, _ := r.errInfo(t); r.status != 401 || code != "operator_token_revoked" {
		t.Fatalf("revoked token: %d %s", r.status, r.body)
	}
	// The owner revokes its own.
	e.mustStatus(e.do("POST", "/admin/v1/tokens/"+keep.ID+"/revoke", keep.Secret, nil, nil), 200)
	e.mustStatus(e.do("GET", "/admin/v1/whoami", keep.Secret, nil, nil), 401)

	e.mustStatus(e.do("GET", "/admin/v1/whoami", short.Secret, nil, nil), 200)
	offset.Store(int64(2 * time.Hour))
	r = e.do("GET", "/admin/v1/accounts", short.Secret, nil, nil)
	if _, code, _ := r.errInfo(t); r.status != 401 || code != "operator_token_expired" {
		t.Fatalf("expired token: %d %s", r.status, r.body)
	}
	offset.Store(0)
	e.mustStatus(e.do("GET", "/admin/v1/whoami", short.Secret, nil, nil), 200)
	// A refused token's change attempt is audited naming the token.
	e.do("POST", "/admin/v1/accounts", mine.Secret, map[string]string{"customer": "X", "residency": "se"}, nil)
	var page adminapi.AuditPage
	e.mustStatus(e.admin("GET", "/admin/v1/audit?actor=anonymous", nil), 200).json(t, &page)
	if len(page.Data) == 0 || !strings.Contains(string(page.Data[0].Request), mine.ID) || !strings.Contains(string(page.Data[0].Request), "revoked") {
		t.Fatalf("refused token in the audit log: %+v", page.Data)
	}
	// Disabling the operator stops its tokens.
	e.mustStatus(e.admin("PATCH", "/admin/v1/operators/otto", map[string]bool{"disabled": true}), 200)
	e.mustStatus(e.do("GET", "/admin/v1/whoami", short.Secret, nil, nil), 401)
	// An unknown secret of the right shape is refused alike.
	e.mustStatus(e.do("GET", "/admin/v1/whoami", adminapi.OperatorTokenPrefix+strings.Repeat("0", 64), nil, nil), 401)
}

// Bad token requests get the error envelope; the admin token makes tokens only for a
// named operator.
func TestCreateTokenValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	otto := e.login("otto", "operator")
	past := time.Now().Add(-time.Minute)
	tests := []struct {
		name  string
		cred  string
		in    adminapi.CreateTokenRequest
		want  int
		param string
	}{
		{"empty name", otto, adminapi.CreateTokenRequest{}, 400, "name"},
		{"name with slash", otto, adminapi.CreateTokenRequest{Name: "a/b"}, 400, "name"},
		{"expiry in the past", otto, adminapi.CreateTokenRequest{Name: "old", ExpiresAt: &past}, 400, "expires_at"},
		{"operator names another", otto, adminapi.CreateTokenRequest{Name: "x", Operator: "ada"}, 400, "operator"},
		{"admin token without operator", adminToken, adminapi.CreateTokenRequest{Name: "x"}, 400, "operator"},
		{"admin token, unknown operator", adminToken, adminapi.CreateTokenRequest{Name: "x", Operator: "nobody"}, 404, ""},
		{"admin token beyond the operator's role", adminToken, adminapi.CreateTokenRequest{Name: "x", Operator: "otto", Role: "admin"}, 403, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do("POST", "/admin/v1/tokens", tt.cred, tt.in, nil)
			if r.status != tt.want {
				t.Fatalf("status %d, want %d: %s", r.status, tt.want, r.body)
			}
			if _, _, param := r.errInfo(t); param != tt.param {
				t.Fatalf("param %q, want %q", param, tt.param)
			}
		})
	}
	ct := e.makeToken(adminToken, adminapi.CreateTokenRequest{Name: "bootstrap", Operator: "otto"})
	if ct.Operator != "otto" || ct.Role != "operator" || ct.CreatedBy != "token" {
		t.Fatalf("token made by the admin token %+v", ct)
	}
	// A live name is taken; after revoking it the name is free again.
	e.mustStatus(e.do("POST", "/admin/v1/tokens", otto, adminapi.CreateTokenRequest{Name: "bootstrap"}, nil), 409)
	e.mustStatus(e.do("POST", "/admin/v1/tokens/"+ct.ID+"/revoke", otto, nil, nil), 200)
	e.makeToken(otto, adminapi.CreateTokenRequest{Name: "bootstrap"})
	e.mustStatus(e.do("POST", "/admin/v1/tokens/otk_0000000000000000/revoke", otto, nil, nil), 404)
}
