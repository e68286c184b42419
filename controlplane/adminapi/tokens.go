package adminapi

import "time"

// OperatorTokenPrefix starts every operator token's secret.
const OperatorTokenPrefix = "gwo_"

// OperatorToken is an operator's API token: Authorization: Bearer <secret> acts as its
// operator with its role (capped by the operator's role at the time of use). The secret
// is only in the answer to its creation (CreatedToken).
type OperatorToken struct {
	ID         string     `json:"id"`
	Operator   string     `json:"operator"`
	Name       string     `json:"name"`
	Role       string     `json:"role"`
	State      string     `json:"state"` // active, expired or revoked
	CreatedBy  string     `json:"created_by"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	RevokedBy  string     `json:"revoked_by,omitempty"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

// CreatedToken is the answer to POST /admin/v1/tokens: the token and its secret, shown
// this once.
type CreatedToken struct {
	OperatorToken
	Secret string `json:"secret"`
}

// CreateTokenRequest is the body of POST /admin/v1/tokens. Role defaults to the caller's
// and may not exceed it; ExpiresAt (absent: never) must be in the future. Operator is
// only for the admin token, which belongs to no operator: it names whose token to make.
type CreateTokenRequest struct {
	Name      string     `json:"name"`
	Role      string     `json:"role,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Operator  string     `json:"operator,omitempty"`
}

// Whoami is GET /admin/v1/whoami: who the request's credential acts as.
type Whoami struct {
	Actor      string `json:"actor"`    // "operator:<name>" or "token" (the admin token)
	Operator   string `json:"operator"` // "" for the admin token
	Role       string `json:"role"`     // the role the credential acts with
	Credential string `json:"credential"`
	// OperatorRole is the operator's own role (a token may have less).
	OperatorRole string `json:"operator_role,omitempty"`
	// Token is the operator token in use, when the credential is one.
	Token *OperatorToken `json:"token,omitempty"`
	// ExpiresAt is when the session or token stops working (absent: never).
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// Credentials, as Whoami and AuditEntry name them.
const (
	CredentialAdminToken    = "admin_token"
	CredentialSession       = "session"
	CredentialOIDCSession   = "oidc_session"
	CredentialOperatorToken = "operator_token"
)
