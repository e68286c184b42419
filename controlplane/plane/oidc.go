package plane

import (
	"fmt"
	"strings"

	"github.com/sekgate/gateway/controlplane/oidclogin"
	"github.com/sekgate/gateway/internal/flagenv"
)

// oidcConfig holds the flags of console sign-in through an OIDC provider.
type oidcConfig struct {
	IssuerURL      string         `flag:"oidc-issuer-url" help:"issuer URL of an OIDC provider for console sign-in (empty: none)"`
	ClientID       string         `flag:"oidc-client-id" help:"the console's client ID at the OIDC provider"`
	ClientSecret   flagenv.Secret `flag:"oidc-client-secret" help:"the console's client secret at the OIDC provider"`
	RedirectURL    string         `flag:"oidc-redirect-url" help:"the console's callback as browsers reach it, https://<admin host>/console/oidc/callback"`
	Scopes         string         `flag:"oidc-scopes" default:"profile" help:"comma-separated scopes asked for beside openid and email (add the one that sends --oidc-role-claim)"`
	AllowedDomains string         `flag:"oidc-allowed-domains" help:"comma-separated email domains that may sign in (empty: only users --oidc-role-map maps)"`
	RoleClaim      string         `flag:"oidc-role-claim" help:"claim (a string or a list) whose values --oidc-role-map maps to roles, e.g. groups"`
	RoleMap        string         `flag:"oidc-role-map" help:"claim-value=role pairs, e.g. platform=admin,sre=operator (the highest mapped role wins)"`
	DefaultRole    string         `flag:"oidc-default-role" default:"viewer" help:"role of a new operator from an allowed domain with no mapped role (none: refuse them)"`
}

// provider returns the OIDC sign-in, or nil when --oidc-issuer-url is empty.
func (c *oidcConfig) provider() (*oidclogin.Provider, error) {
	if c.IssuerURL == "" {
		return nil, nil
	}
	roleMap, err := oidclogin.ParseRoleMap(c.RoleMap)
	if err != nil {
		return nil, fmt.Errorf("--oidc-role-map: %w", err)
	}
	def := c.DefaultRole
	if def == "none" {
		def = ""
	}
	p, err := oidclogin.New(oidclogin.Config{IssuerURL: c.IssuerURL, ClientID: c.ClientID, ClientSecret: c.ClientSecret.Reveal(),
		RedirectURL: c.RedirectURL, Scopes: splitList(c.Scopes), AllowedDomains: splitList(c.AllowedDomains),
		RoleClaim: c.RoleClaim, RoleMap: roleMap, DefaultRole: def})
	if err != nil {
		return nil, fmt.Errorf("--oidc-*: %w", err)
	}
	return p, nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	out := []string{}
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
