package api_test

import (
	"testing"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// Operators may carry an email (for sign-in through OIDC) and then need no password; a
// password-less operator cannot log in with a password.
func TestOperatorEmail(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var o adminapi.Operator
	e.mustStatus(e.admin("POST", "/admin/v1/operators", adminapi.CreateOperatorRequest{Name: "sso", Role: "viewer", Email: " SSO@Example.com "}), 201).json(t, &o)
	if o.Email != "sso@example.com" {
		t.Fatalf("operator %+v", o)
	}
	tests := []struct {
		name   string
		method string
		path   string
		body   any
		want   int
		param  string
	}{
		{"neither password nor email", "POST", "/admin/v1/operators", adminapi.CreateOperatorRequest{Name: "x", Role: "viewer"}, 400, "password"},
		{"not an email", "POST", "/admin/v1/operators", adminapi.CreateOperatorRequest{Name: "x", Role: "viewer", Email: "x at example"}, 400, "email"},
		{"email taken", "POST", "/admin/v1/operators", adminapi.CreateOperatorRequest{Name: "x", Role: "viewer", Email: "sso@example.com"}, 409, ""},
		{"removing the email of a password-less operator", "PATCH", "/admin/v1/operators/sso", map[string]string{"email": ""}, 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.admin(tt.method, tt.path, tt.body)
			if r.status != tt.want {
				t.Fatalf("status %d, want %d: %s", r.status, tt.want, r.body)
			}
			if _, _, param := r.errInfo(t); param != tt.param {
				t.Fatalf("param %q, want %q", param, tt.param)
			}
		})
	}
	e.mustStatus(e.do("POST", "/admin/v1/sessions", "", adminapi.LoginRequest{Name: "sso", Password: "any long password here"}, nil), 401)
	// Without a provider configured, the OIDC sign-in is not there.
	r := e.do("POST", "/admin/v1/sessions/oidc", "", adminapi.OIDCLoginRequest{Code: "c", CodeVerifier: "v", Nonce: "n"}, nil)
	if _, code, _ := r.errInfo(t); r.status != 404 || code != "not_found" {
		t.Fatalf("OIDC sign-in without a provider: %d %s", r.status, r.body)
	}
}
