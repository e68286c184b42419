package adminclient

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Account is an account as the admin API shows it.
type Account struct {
	ID              string          `json:"id"`
	Customer        string          `json:"customer"`
	Residency       string          `json:"residency"`
	Suspended       bool            `json:"suspended"`
	CreatedAt       time.Time       `json:"created_at"`
	BalanceMicroSEK int64           `json:"balance_micro_sek"`
	BalanceSEK      string          `json:"balance_sek"`
	Models          []string        `json:"models"`
	Limits          json.RawMessage `json:"limits,omitempty"`
}

// List is the {data: [...]} wrapper of list answers.
type List[T any] struct {
	Data []T `json:"data"`
}

// CreateAccountRequest is the body of POST /admin/v1/accounts.
type CreateAccountRequest struct {
	Customer  string `json:"customer"`
	Residency string `json:"residency"`
}

// PatchAccountRequest is the body of PATCH /admin/v1/accounts/{id}; nil fields are left out.
type PatchAccountRequest struct {
	Residency *string         `json:"residency,omitempty"`
	Suspended *bool           `json:"suspended,omitempty"`
	Limits    json.RawMessage `json:"limits,omitempty"`
}

// CreditRequest is the body of POST /admin/v1/accounts/{id}/credits.
type CreditRequest struct {
	AmountSEK string `json:"amount_sek"` // exact decimal string, e.g. "100.00"
	Note      string `json:"note,omitempty"`
	Reference string `json:"reference,omitempty"` // idempotency: one credit per reference
}

// Credit is the answer of POST /admin/v1/accounts/{id}/credits.
type Credit struct {
	EntryID int64 `json:"entry_id"`
	// Applied is false when the reference had already been credited (nil if not reported).
	Applied         *bool  `json:"applied,omitempty"`
	BalanceMicroSEK int64  `json:"balance_micro_sek"`
	BalanceSEK      string `json:"balance_sek"`
}

// CreateKeyRequest is the body of POST /admin/v1/accounts/{id}/keys.
type CreateKeyRequest struct {
	Name          string `json:"name,omitempty"`
	ExpiresInDays int    `json:"expires_in_days,omitempty"`
}

// Key is an API key; Secret is set only in the answer that created it.
type Key struct {
	ID        string          `json:"id"`
	Secret    string          `json:"secret,omitempty"`
	AccountID string          `json:"account_id"`
	Name      string          `json:"name"`
	CreatedAt time.Time       `json:"created_at"`
	ExpiresAt *time.Time      `json:"expires_at"`
	RevokedAt *time.Time      `json:"revoked_at"`
	Limits    json.RawMessage `json:"limits,omitempty"`
}

// Route is a route of a model (the snapshot's route shape).
type Route struct {
	ID             string   `json:"id"`
	Model          string   `json:"model"`
	Provider       string   `json:"provider"`
	BaseURL        string   `json:"base_url"`
	UpstreamModel  string   `json:"upstream_model,omitempty"`
	CredentialsRef string   `json:"credentials_ref,omitempty"`
	Protocols      []string `json:"protocols"`
	Translate      bool     `json:"translate"`
	Region         string   `json:"region"`
	Country        string   `json:"country"`
	Priority       int      `json:"priority"`
	Weight         int      `json:"weight"`
	// Opt-ins for request values refused by default (see shared/snapshot.Route).
	AllowRemoteMedia bool     `json:"allow_remote_media,omitempty"`
	AllowExtensions  []string `json:"allow_extensions,omitempty"`
}

// Model is a catalogue model with its price and routes.
type Model struct {
	ID                  string   `json:"id"`
	Aliases             []string `json:"aliases"`
	Endpoint            string   `json:"endpoint"`
	Created             int64    `json:"created"`
	ContextTokens       int64    `json:"context_tokens"`
	Tokenizer           string   `json:"tokenizer"`
	InputOrePerMillion  int64    `json:"input_ore_per_million_tokens"`
	OutputOrePerMillion int64    `json:"output_ore_per_million_tokens"`
	Routes              []Route  `json:"routes"`
}

// CatalogResult is the answer of PUT /admin/v1/catalog.
type CatalogResult struct {
	Models int `json:"models"`
	Routes int `json:"routes"`
}

// Node is a data-plane node as the control plane last saw it.
type Node struct {
	NodeID         string    `json:"node_id"`
	AppliedVersion int64     `json:"applied_version"`
	LastSeen       time.Time `json:"last_seen"`
}

// RejectedRecord is a usage record the control plane refused.
type RejectedRecord struct {
	ID         int64     `json:"id"`
	RequestID  string    `json:"request_id"`
	AccountID  string    `json:"account_id"`
	NodeID     string    `json:"node_id"`
	BatchID    string    `json:"batch_id"`
	Reason     string    `json:"reason"`
	Record     string    `json:"record"`
	ReceivedAt time.Time `json:"received_at"`
}

// RejectedRecords is the latest refused records and the count of all.
type RejectedRecords struct {
	Data  []RejectedRecord `json:"data"`
	Total int64            `json:"total"`
}

// SnapshotInfo describes the current snapshot.
type SnapshotInfo struct {
	Version     int64     `json:"version"`
	Hash        string    `json:"hash"`
	GeneratedAt time.Time `json:"generated_at"`
}

// CreateAccount creates an account.
func (c *Client) CreateAccount(ctx context.Context, r CreateAccountRequest) (Account, json.RawMessage, error) {
	return call[Account](ctx, c, http.MethodPost, "/admin/v1/accounts", r)
}

// ListAccounts lists accounts.
func (c *Client) ListAccounts(ctx context.Context) (List[Account], json.RawMessage, error) {
	return call[List[Account]](ctx, c, http.MethodGet, "/admin/v1/accounts", nil)
}

// GetAccount reads one account.
func (c *Client) GetAccount(ctx context.Context, id string) (Account, json.RawMessage, error) {
	return call[Account](ctx, c, http.MethodGet, "/admin/v1/accounts/"+esc(id), nil)
}

// PatchAccount changes an account's residency, suspension or limits.
func (c *Client) PatchAccount(ctx context.Context, id string, r PatchAccountRequest) (Account, json.RawMessage, error) {
	return call[Account](ctx, c, http.MethodPatch, "/admin/v1/accounts/"+esc(id), r)
}

// Credit adds an exact decimal amount of SEK to an account's balance.
func (c *Client) Credit(ctx context.Context, id string, r CreditRequest) (Credit, json.RawMessage, error) {
	return call[Credit](ctx, c, http.MethodPost, "/admin/v1/accounts/"+esc(id)+"/credits", r)
}

// CreateKey issues an API key; the answer holds the secret, shown only this once.
func (c *Client) CreateKey(ctx context.Context, accountID string, r CreateKeyRequest) (Key, json.RawMessage, error) {
	return call[Key](ctx, c, http.MethodPost, "/admin/v1/accounts/"+esc(accountID)+"/keys", r)
}

// ListKeys lists an account's keys (never their secrets).
func (c *Client) ListKeys(ctx context.Context, accountID string) (List[Key], json.RawMessage, error) {
	return call[List[Key]](ctx, c, http.MethodGet, "/admin/v1/accounts/"+esc(accountID)+"/keys", nil)
}

// RevokeKey revokes a key.
func (c *Client) RevokeKey(ctx context.Context, keyID string) (Key, json.RawMessage, error) {
	return call[Key](ctx, c, http.MethodPost, "/admin/v1/keys/"+esc(keyID)+"/revoke", nil)
}

// SetKeyLimits sets a key's own request limits (limits is a JSON object, or null to clear).
func (c *Client) SetKeyLimits(ctx context.Context, keyID string, limits json.RawMessage) (Key, json.RawMessage, error) {
	body := struct {
		Limits json.RawMessage `json:"limits"`
	}{limits}
	return call[Key](ctx, c, http.MethodPatch, "/admin/v1/keys/"+esc(keyID), body)
}

// EnableModels lets an account use models (canonical IDs or aliases).
func (c *Client) EnableModels(ctx context.Context, accountID string, models []string) (json.RawMessage, error) {
	body := struct {
		Models []string `json:"models"`
	}{models}
	return c.Do(ctx, http.MethodPost, "/admin/v1/accounts/"+esc(accountID)+"/models", body)
}

// DisableModel takes a model away from an account. A slash in an alias is escaped as %2F.
func (c *Client) DisableModel(ctx context.Context, accountID, model string) (json.RawMessage, error) {
	return c.Do(ctx, http.MethodDelete, "/admin/v1/accounts/"+esc(accountID)+"/models/"+esc(model), nil)
}

// ListModels lists the catalogue with prices and routes.
func (c *Client) ListModels(ctx context.Context) (List[Model], json.RawMessage, error) {
	return call[List[Model]](ctx, c, http.MethodGet, "/admin/v1/models", nil)
}

// ListRoutes lists every route.
func (c *Client) ListRoutes(ctx context.Context) (List[Route], json.RawMessage, error) {
	return call[List[Route]](ctx, c, http.MethodGet, "/admin/v1/routes", nil)
}

// PutCatalog upserts a catalogue given as JSON.
func (c *Client) PutCatalog(ctx context.Context, catalog json.RawMessage) (CatalogResult, json.RawMessage, error) {
	return call[CatalogResult](ctx, c, http.MethodPut, "/admin/v1/catalog", catalog)
}

// ListNodes lists data-plane nodes and the snapshot version each applied.
func (c *Client) ListNodes(ctx context.Context) (List[Node], json.RawMessage, error) {
	return call[List[Node]](ctx, c, http.MethodGet, "/admin/v1/nodes", nil)
}

// ListRejected lists the latest usage records the control plane refused (limit 1 to 1000).
func (c *Client) ListRejected(ctx context.Context, limit int) (RejectedRecords, json.RawMessage, error) {
	return call[RejectedRecords](ctx, c, http.MethodGet, "/admin/v1/rejected-records?limit="+strconv.Itoa(limit), nil)
}

// Snapshot describes the current snapshot.
func (c *Client) Snapshot(ctx context.Context) (SnapshotInfo, json.RawMessage, error) {
	return call[SnapshotInfo](ctx, c, http.MethodGet, "/admin/v1/snapshot", nil)
}
