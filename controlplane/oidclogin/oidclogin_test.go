package oidclogin

import (
	"errors"
	"strings"
	"testing"
)

func TestNewRefusesOpenDoors(t *testing.T) {
	base := Config{IssuerURL: "https://idp.example", ClientID: "c", ClientSecret: "s", RedirectURL: "https://adm.example/console/oidc/callback"}
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no domains and no mapping", func(c *Config) {}, "anyone"},
		{"mapping without claim", func(c *Config) { c.RoleMap = map[string]string{"g": "admin"} }, "claim"},
		{"mapping to a bad role", func(c *Config) { c.RoleClaim, c.RoleMap = "groups", map[string]string{"g": "root"} }, "g=root"},
		{"bad default role", func(c *Config) { c.AllowedDomains, c.DefaultRole = []string{"example.com"}, "owner" }, "default role"},
		{"no secret", func(c *Config) { c.AllowedDomains, c.ClientSecret = []string{"example.com"}, "" }, "required"},
		{"relative redirect", func(c *Config) { c.AllowedDomains, c.RedirectURL = []string{"example.com"}, "/console/oidc/callback" }, "redirect URL"},
		{"domains only", func(c *Config) { c.AllowedDomains = []string{"example.com"} }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.edit(&c)
			_, err := New(c)
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("New: %v, want %q", err, tt.want)
			}
		})
	}
}

func TestIdentify(t *testing.T) {
	domains, err := New(Config{IssuerURL: "https://idp.example", ClientID: "c", ClientSecret: "s", RedirectURL: "https://a.example/cb",
		AllowedDomains: []string{"@Example.com"}, DefaultRole: "viewer", RoleClaim: "groups",
		RoleMap: map[string]string{"platform": "admin", "sre": "operator"}})
	if err != nil {
		t.Fatal(err)
	}
	mapped, err := New(Config{IssuerURL: "https://idp.example", ClientID: "c", ClientSecret: "s", RedirectURL: "https://a.example/cb",
		DefaultRole: "viewer", RoleClaim: "role", RoleMap: map[string]string{"ops": "operator"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		p             *Provider
		claims        map[string]any
		role, newRole string
		refused       bool
	}{
		{"allowed domain, no group", domains, map[string]any{"email": "Ann@EXAMPLE.com", "email_verified": true}, "", "viewer", false},
		{"highest group wins", domains, map[string]any{"email": "a@example.com", "email_verified": true, "groups": []any{"sre", "platform", 3}}, "admin", "admin", false},
		{"other domain", domains, map[string]any{"email": "a@example.org", "email_verified": true, "groups": []any{"platform"}}, "", "", true},
		{"unverified", domains, map[string]any{"email": "a@example.com", "email_verified": false}, "", "", true},
		{"no email", domains, map[string]any{"email_verified": true}, "", "", true},
		{"mapping only: string claim", mapped, map[string]any{"email": "a@any.org", "email_verified": true, "role": "ops"}, "operator", "operator", false},
		{"mapping only: unmapped user is no new operator", mapped, map[string]any{"email": "a@any.org", "email_verified": true}, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := tt.p.identify("sub", tt.claims)
			if tt.refused {
				if !errors.Is(err, ErrRefused) {
					t.Fatalf("identify: %+v %v, want refused", id, err)
				}
				return
			}
			if err != nil || id.Role != tt.role || id.NewRole != tt.newRole || id.Email != strings.ToLower(id.Email) {
				t.Fatalf("identify: %+v %v, want role %q new role %q", id, err, tt.role, tt.newRole)
			}
		})
	}
}

func TestParseRoleMap(t *testing.T) {
	m, err := ParseRoleMap(" platform=admin, sre = operator ,")
	if err != nil || len(m) != 2 || m["platform"] != "admin" || m["sre"] != "operator" {
		t.Fatalf("%v %v", m, err)
	}
	for _, bad := range []string{"platform", "=admin", "platform=root"} {
		if _, err := ParseRoleMap(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
