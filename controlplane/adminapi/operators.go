package adminapi

import (
	"encoding/json"
	"time"

	"github.com/sekgate/gateway/shared/usage"
)

// Operator roles, weakest first: a viewer reads; an operator also changes accounts, keys,
// credits and signups and uses the test box; an admin also loads the catalogue and
// manages operators. The static admin token acts as an admin. Any role may make and revoke
// its own operator tokens; an admin sees and revokes everyone's.
const (
	RoleViewer   = "viewer"
	RoleOperator = "operator"
	RoleAdmin    = "admin"
)

// Operator is a named user of the console and the admin API.
type Operator struct {
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	Email     string    `json:"email,omitempty"` // the email an OIDC provider vouches for
	Disabled  bool      `json:"disabled"`
	CreatedAt time.Time `json:"created_at"`
}

// CreateOperatorRequest is the body of POST /admin/v1/operators: a password, an email
// (for console sign-in through OIDC), or both.
type CreateOperatorRequest struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	Password string `json:"password,omitempty"`
	Email    string `json:"email,omitempty"`
}

// PatchOperatorRequest is the body of PATCH /admin/v1/operators/{name}; absent fields are
// left as they are. Any change ends the operator's sessions.
type PatchOperatorRequest struct {
	Role     *string `json:"role,omitempty"`
	Password *string `json:"password,omitempty"`
	Disabled *bool   `json:"disabled,omitempty"`
	Email    *string `json:"email,omitempty"` // "" removes it
}

// LoginRequest is the body of POST /admin/v1/sessions.
type LoginRequest struct {
	Name     string `json:"name"`
	Password string `json:"password"`
}

// OIDCLoginRequest is the body of POST /admin/v1/sessions/oidc: the authorization code the
// provider sent to the console's callback, with the PKCE verifier and nonce the console
// kept for this sign-in.
type OIDCLoginRequest struct {
	Code         string `json:"code"`
	CodeVerifier string `json:"code_verifier"`
	Nonce        string `json:"nonce"`
}

// Session is a logged-in operator. Token (only in the answer to a login) is the bearer
// token of the admin API for this login; CSRFToken is the form token the console puts
// in every form while the login lasts.
type Session struct {
	Token     string    `json:"token,omitempty"`
	CSRFToken string    `json:"csrf_token"`
	Operator  string    `json:"operator"`
	Role      string    `json:"role"`
	ExpiresAt time.Time `json:"expires_at"`
}

// AuditEntry is one change attempted through the admin API.
type AuditEntry struct {
	ID     int64     `json:"id"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"` // "operator:<name>" or "token"
	Role   string    `json:"role"`
	Action string    `json:"action"` // method and route, e.g. "POST /admin/v1/accounts/{id}/credits"
	Target string    `json:"target"` // the resource changed (an account, key, signup or operator ID)
	Status int       `json:"status"`
	// Credential is what made the change: admin_token (the shared bootstrap and
	// break-glass token), session, oidc_session or operator_token (TokenID and TokenName
	// name it); "" for failed authentications and entries from before it was recorded.
	Credential string `json:"credential"`
	TokenID    string `json:"token_id,omitempty"`
	TokenName  string `json:"token_name,omitempty"`
	// Request is the body sent (passwords removed), Before the target as it was, After the
	// answer (key secrets and session tokens removed); null when there was none.
	Request json.RawMessage `json:"request"`
	Before  json.RawMessage `json:"before"`
	After   json.RawMessage `json:"after"`
}

// AuditPage is a page of the audit log, newest first; NextBefore continues it (absent at
// the end).
type AuditPage struct {
	Data       []AuditEntry `json:"data"`
	NextBefore *int64       `json:"next_before,omitempty"`
}

// LedgerEntry is an entry of an account's ledger.
type LedgerEntry struct {
	ID             int64     `json:"id"`
	Kind           string    `json:"kind"` // credit, topup, debit, refund or adjustment
	AmountMicroSEK int64     `json:"amount_micro_sek"`
	AmountSEK      string    `json:"amount_sek"`
	Reference      string    `json:"reference"`
	Note           string    `json:"note"`
	CreatedAt      time.Time `json:"created_at"`
}

// LedgerPage is a page of an account's ledger, newest first; NextBefore continues it.
type LedgerPage struct {
	Data       []LedgerEntry `json:"data"`
	NextBefore *int64        `json:"next_before,omitempty"`
}

// AdjustmentRequest is the body of POST /admin/v1/accounts/{id}/adjustments: a signed
// exact decimal amount and the reason, both required.
type AdjustmentRequest struct {
	AmountSEK string `json:"amount_sek"` // e.g. "-12.50" or "3.00"
	Reason    string `json:"reason"`
}

// DailyUsage is an account's usage of one model on one day (UTC).
type DailyUsage struct {
	Day              string `json:"day"` // YYYY-MM-DD
	Model            string `json:"model"`
	Requests         int64  `json:"requests"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	PriceMicroSEK    int64  `json:"price_micro_sek"`
	PriceSEK         string `json:"price_sek"`
}

// UsageReport is GET /admin/v1/accounts/{id}/usage: per day and model over Days days,
// and the totals of the period.
type UsageReport struct {
	Days          int          `json:"days"`
	Data          []DailyUsage `json:"data"`
	PriceMicroSEK int64        `json:"price_micro_sek"`
	PriceSEK      string       `json:"price_sek"`
}

// Record is a request record as operators see it (any account's).
type Record = usage.Record

// RecordPage is a page of request records, newest first; NextCursor continues it.
type RecordPage struct {
	Data       []Record `json:"data"`
	NextCursor string   `json:"next_cursor,omitempty"`
}

// TestBoxRequest is the body of POST /admin/v1/accounts/{id}/test-box: a chat request
// sent on behalf of the account, recorded with key_id null and charged like any other.
type TestBoxRequest struct {
	Model     string `json:"model"`
	Message   string `json:"message"`
	MaxTokens int    `json:"max_tokens,omitempty"`
}

// TestBoxResult is the data plane's answer to a test-box request.
type TestBoxResult struct {
	Status    int             `json:"status"`
	RequestID string          `json:"request_id"`
	Body      json.RawMessage `json:"body"`
}

// AccountPage is GET /admin/v1/accounts with q, limit or after: accounts by ID;
// NextAfter continues it (absent at the end).
type AccountPage struct {
	Data      []Account `json:"data"`
	NextAfter string    `json:"next_after,omitempty"`
}

// Overview is GET /admin/v1/overview: the service at a glance for operators (UTC days).
type Overview struct {
	SpendTodayMicroSEK int64  `json:"spend_today_micro_sek"`
	SpendTodaySEK      string `json:"spend_today_sek"`
	SpendMonthMicroSEK int64  `json:"spend_month_micro_sek"`
	SpendMonthSEK      string `json:"spend_month_sek"`
	RequestsToday      int64  `json:"requests_today"`
	RequestsMonth      int64  `json:"requests_month"`
	// ResultsToday counts today's request records by result (ok, upstream_error, …).
	ResultsToday map[string]int64 `json:"results_today"`
	// LowBalance lists active accounts under LowBalanceSEK, lowest first.
	LowBalanceSEK  string    `json:"low_balance_sek"`
	LowBalance     []Account `json:"low_balance"`
	PendingSignups int64     `json:"pending_signups"`
	// SilentNodes are nodes not seen for SilentAfterSeconds.
	SilentAfterSeconds int      `json:"silent_after_seconds"`
	SilentNodes        []string `json:"silent_nodes"`
	// UnhealthyRoutes maps routes that a node cannot use (route problems) or whose breaker
	// is not closed to what the nodes report ("unreachable on se-1").
	UnhealthyRoutes map[string]string `json:"unhealthy_routes"`
}

// RefusalReport is GET /admin/v1/accounts/{id}/refusals: the account's requests that nodes
// refused after authentication and before routing (never request records), per UTC day,
// key, status and error code, over the last Days days, and their total.
type RefusalReport struct {
	Days  int       `json:"days"`
	Total int64     `json:"total"`
	Data  []Refusal `json:"data"`
}

// Refusal is how often one key got one refusal on one day.
type Refusal struct {
	Day    string `json:"day"` // YYYY-MM-DD
	KeyID  string `json:"key_id"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	Count  int64  `json:"count"`
}
