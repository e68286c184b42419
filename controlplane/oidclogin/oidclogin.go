// Package oidclogin signs operators in to the console through an OpenID Connect provider:
// the authorization code flow with PKCE and a nonce (github.com/coreos/go-oidc/v3 and
// golang.org/x/oauth2), the ID token verified against the provider's keys, and the
// provider's verified email and claims turned into who may enter and with which role.
//
// The provider's discovery document is read on first use, and read again after a failure,
// so the control plane starts while the provider is unreachable.
package oidclogin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Roles, weakest first (the control plane's operator roles).
var roles = []string{"viewer", "operator", "admin"}

// Config configures sign-in through one provider.
type Config struct {
	// IssuerURL is the provider's issuer (its discovery document is at
	// IssuerURL/.well-known/openid-configuration). Required.
	IssuerURL string
	// ClientID and ClientSecret are the console's client at the provider. Required.
	ClientID, ClientSecret string
	// RedirectURL is the console's callback as the browser reaches it, ending in
	// /console/oidc/callback; registered with the provider. Required.
	RedirectURL string
	// Scopes are asked for beside openid and email (default: profile). A role claim the
	// provider sends only for a scope (groups, say) needs that scope here.
	Scopes []string
	// AllowedDomains are the email domains that may sign in (empty: any domain, and then
	// RoleMap must be set, so only mapped users enter).
	AllowedDomains []string
	// RoleClaim names the ID token claim (a string or a list of strings) whose values
	// RoleMap turns into roles; the highest mapped role wins.
	RoleClaim string
	RoleMap   map[string]string
	// DefaultRole is the role of a new operator whose domain is allowed but who has no
	// mapped role ("" refuses them). It never applies without AllowedDomains.
	DefaultRole string
	// HTTP is the client for the provider (default: a 10 s timeout).
	HTTP *http.Client
	// Now is the clock the ID token's times are checked on (default time.Now).
	Now func() time.Time
}

// Identity is who the provider vouches for.
type Identity struct {
	Subject string
	Email   string // lower case, verified by the provider
	// Role is the role the claims map to ("" when none maps); NewRole is the role a new
	// operator gets: Role, or DefaultRole for an allowed domain ("" refuses them).
	Role, NewRole string
}

// ErrRefused is a sign-in the provider completed but whose account may not enter (an
// unverified email, a domain not allowed, no role).
var ErrRefused = errors.New("oidc: account not allowed")

// Provider is one configured provider.
type Provider struct {
	cfg Config

	mu       sync.Mutex
	provider *oidc.Provider // nil until discovery succeeds
}

// New validates cfg; the provider is contacted on first use.
func New(cfg Config) (*Provider, error) {
	switch {
	case cfg.IssuerURL == "" || cfg.ClientID == "" || cfg.ClientSecret == "":
		return nil, errors.New("oidc: issuer URL, client ID and client secret are required")
	case cfg.RedirectURL == "":
		return nil, errors.New("oidc: the redirect URL (the console's /console/oidc/callback) is required")
	case len(cfg.AllowedDomains) == 0 && len(cfg.RoleMap) == 0:
		return nil, errors.New("oidc: give allowed email domains or a claim to role mapping, else anyone with an account at the provider could enter")
	case len(cfg.RoleMap) > 0 && cfg.RoleClaim == "":
		return nil, errors.New("oidc: a role mapping needs the claim it reads")
	case cfg.DefaultRole != "" && !slices.Contains(roles, cfg.DefaultRole):
		return nil, fmt.Errorf("oidc: default role %q: want viewer, operator or admin", cfg.DefaultRole)
	}
	if u, err := url.Parse(cfg.RedirectURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("oidc: redirect URL %q: want http(s)://host/console/oidc/callback", cfg.RedirectURL)
	}
	for v, r := range cfg.RoleMap {
		if !slices.Contains(roles, r) {
			return nil, fmt.Errorf("oidc: role mapping %s=%s: want viewer, operator or admin", v, r)
		}
	}
	for i, d := range cfg.AllowedDomains {
		cfg.AllowedDomains[i] = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(d), "@"))
	}
	if cfg.Scopes == nil {
		cfg.Scopes = []string{"profile"}
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Provider{cfg: cfg}, nil
}

// Issuer is the provider's issuer URL (the console names it on its login page).
func (p *Provider) Issuer() string { return p.cfg.IssuerURL }

func (p *Provider) discover(ctx context.Context) (*oidc.Provider, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.provider != nil {
		return p.provider, nil
	}
	op, err := oidc.NewProvider(oidc.ClientContext(ctx, p.cfg.HTTP), p.cfg.IssuerURL)
	if err != nil {
		return nil, fmt.Errorf("oidc: discovery at %s: %w", p.cfg.IssuerURL, err)
	}
	p.provider = op
	return op, nil
}

func (p *Provider) oauth(op *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret, RedirectURL: p.cfg.RedirectURL,
		Endpoint: op.Endpoint(), Scopes: append([]string{oidc.ScopeOpenID, "email"}, p.cfg.Scopes...)}
}

// AuthURL is where to send the browser to sign in: state, nonce and the PKCE verifier
// are the caller's, kept until the callback.
func (p *Provider) AuthURL(ctx context.Context, state, nonce, verifier string) (string, error) {
	op, err := p.discover(ctx)
	if err != nil {
		return "", err
	}
	return p.oauth(op).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), nil
}

// Exchange redeems an authorization code with its PKCE verifier, verifies the ID token
// (signature, issuer, audience, expiry, nonce) and says who it names. ErrRefused wraps an
// account that may not enter.
func (p *Provider) Exchange(ctx context.Context, code, verifier, nonce string) (Identity, error) {
	op, err := p.discover(ctx)
	if err != nil {
		return Identity{}, err
	}
	ctx = oidc.ClientContext(ctx, p.cfg.HTTP)
	tok, err := p.oauth(op).Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		return Identity{}, fmt.Errorf("oidc: exchange the code: %w", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return Identity{}, errors.New("oidc: the provider sent no ID token")
	}
	idt, err := op.Verifier(&oidc.Config{ClientID: p.cfg.ClientID, Now: p.cfg.Now}).Verify(ctx, raw)
	if err != nil {
		return Identity{}, fmt.Errorf("oidc: verify the ID token: %w", err)
	}
	if idt.Nonce != nonce {
		return Identity{}, errors.New("oidc: the ID token's nonce is not this sign-in's")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return Identity{}, fmt.Errorf("oidc: read the ID token's claims: %w", err)
	}
	return p.identify(idt.Subject, claims)
}

// identify turns verified claims into an Identity, or refuses them.
func (p *Provider) identify(subject string, claims map[string]any) (Identity, error) {
	email, _ := claims["email"].(string)
	email = strings.ToLower(strings.TrimSpace(email))
	if verified, _ := claims["email_verified"].(bool); email == "" || !verified {
		return Identity{}, fmt.Errorf("%w: the provider vouches for no verified email", ErrRefused)
	}
	_, domain, _ := strings.Cut(email, "@")
	if len(p.cfg.AllowedDomains) > 0 && !slices.Contains(p.cfg.AllowedDomains, domain) {
		return Identity{}, fmt.Errorf("%w: email domain %s is not allowed", ErrRefused, domain)
	}
	id := Identity{Subject: subject, Email: email, Role: p.mappedRole(claims[p.cfg.RoleClaim])}
	id.NewRole = id.Role
	if id.NewRole == "" && len(p.cfg.AllowedDomains) > 0 {
		id.NewRole = p.cfg.DefaultRole
	}
	return id, nil
}

// mappedRole is the highest role RoleMap gives any value of the claim (a string or a list).
func (p *Provider) mappedRole(claim any) string {
	var values []string
	switch v := claim.(type) {
	case string:
		values = []string{v}
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok {
				values = append(values, s)
			}
		}
	}
	best := -1
	for _, v := range values {
		if i := slices.Index(roles, p.cfg.RoleMap[v]); i > best {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return roles[best]
}

// ParseRoleMap reads value=role pairs separated by commas ("platform=admin,sre=operator").
func ParseRoleMap(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		v, r, ok := strings.Cut(pair, "=")
		v, r = strings.TrimSpace(v), strings.TrimSpace(r)
		if !ok || v == "" || !slices.Contains(roles, r) {
			return nil, fmt.Errorf("role mapping %q: want claim-value=role, role viewer, operator or admin", pair)
		}
		out[v] = r
	}
	return out, nil
}
