package adminclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/catalog"
)

// CreateAccount creates an account.
func (c *Client) CreateAccount(ctx context.Context, r adminapi.CreateAccountRequest) (adminapi.Account, json.RawMessage, error) {
	return call[adminapi.Account](ctx, c, http.MethodPost, "/admin/v1/accounts", r)
}

// ListAccounts lists accounts.
func (c *Client) ListAccounts(ctx context.Context) (adminapi.List[adminapi.Account], json.RawMessage, error) {
	return call[adminapi.List[adminapi.Account]](ctx, c, http.MethodGet, "/admin/v1/accounts", nil)
}

// GetAccount reads one account.
func (c *Client) GetAccount(ctx context.Context, id string) (adminapi.Account, json.RawMessage, error) {
	return call[adminapi.Account](ctx, c, http.MethodGet, "/admin/v1/accounts/"+esc(id), nil)
}

// PatchAccount changes an account's residency, suspension or limits.
func (c *Client) PatchAccount(ctx context.Context, id string, r adminapi.PatchAccountRequest) (adminapi.Account, json.RawMessage, error) {
	return call[adminapi.Account](ctx, c, http.MethodPatch, "/admin/v1/accounts/"+esc(id), r)
}

// Credit adds an exact decimal amount of SEK to an account's balance.
func (c *Client) Credit(ctx context.Context, id string, r adminapi.CreditRequest) (adminapi.Credit, json.RawMessage, error) {
	return call[adminapi.Credit](ctx, c, http.MethodPost, "/admin/v1/accounts/"+esc(id)+"/credits", r)
}

// CreateKey issues an API key; the answer holds the secret, shown only this once.
func (c *Client) CreateKey(ctx context.Context, accountID string, r adminapi.CreateKeyRequest) (adminapi.Key, json.RawMessage, error) {
	return call[adminapi.Key](ctx, c, http.MethodPost, "/admin/v1/accounts/"+esc(accountID)+"/keys", r)
}

// ListKeys lists an account's keys (never their secrets).
func (c *Client) ListKeys(ctx context.Context, accountID string) (adminapi.List[adminapi.Key], json.RawMessage, error) {
	return call[adminapi.List[adminapi.Key]](ctx, c, http.MethodGet, "/admin/v1/accounts/"+esc(accountID)+"/keys", nil)
}

// RevokeKey revokes a key.
func (c *Client) RevokeKey(ctx context.Context, keyID string) (adminapi.Key, json.RawMessage, error) {
	return call[adminapi.Key](ctx, c, http.MethodPost, "/admin/v1/keys/"+esc(keyID)+"/revoke", nil)
}

// SetKeyLimits sets a key's own request limits (limits is a JSON object, or null to clear).
func (c *Client) SetKeyLimits(ctx context.Context, keyID string, limits json.RawMessage) (adminapi.Key, json.RawMessage, error) {
	body := struct {
		Limits json.RawMessage `json:"limits"`
	}{limits}
	return call[adminapi.Key](ctx, c, http.MethodPatch, "/admin/v1/keys/"+esc(keyID), body)
}

// EnableModels lets an account use models (canonical IDs or aliases). A model that no route
// in the account's residency serves is refused unless allowOutsideResidency.
func (c *Client) EnableModels(ctx context.Context, accountID string, models []string, allowOutsideResidency bool) (json.RawMessage, error) {
	body := struct {
		Models                []string `json:"models"`
		AllowOutsideResidency bool     `json:"allow_outside_residency,omitempty"`
	}{models, allowOutsideResidency}
	return c.Do(ctx, http.MethodPost, "/admin/v1/accounts/"+esc(accountID)+"/models", body)
}

// DisableModel takes a model away from an account. A slash in an alias is escaped as %2F.
func (c *Client) DisableModel(ctx context.Context, accountID, model string) (json.RawMessage, error) {
	return c.Do(ctx, http.MethodDelete, "/admin/v1/accounts/"+esc(accountID)+"/models/"+esc(model), nil)
}

// ListModels lists the catalogue with prices and routes.
func (c *Client) ListModels(ctx context.Context) (adminapi.List[adminapi.Model], json.RawMessage, error) {
	return call[adminapi.List[adminapi.Model]](ctx, c, http.MethodGet, "/admin/v1/models", nil)
}

// ListRoutes lists every route.
func (c *Client) ListRoutes(ctx context.Context) (adminapi.List[adminapi.ListedRoute], json.RawMessage, error) {
	return call[adminapi.List[adminapi.ListedRoute]](ctx, c, http.MethodGet, "/admin/v1/routes", nil)
}

// PatchModel changes a model's prices. A slash in the ID is escaped as %2F.
func (c *Client) PatchModel(ctx context.Context, id string, r adminapi.PatchModelRequest) (adminapi.Model, json.RawMessage, error) {
	return call[adminapi.Model](ctx, c, http.MethodPatch, "/admin/v1/models/"+esc(id), r)
}

// PatchRoute changes a route's weight, priority or state.
func (c *Client) PatchRoute(ctx context.Context, id string, r adminapi.PatchRouteRequest) (adminapi.PatchedRoute, json.RawMessage, error) {
	return call[adminapi.PatchedRoute](ctx, c, http.MethodPatch, "/admin/v1/routes/"+esc(id), r)
}

// GetCatalog reads the whole catalogue in the shape PutCatalog takes.
func (c *Client) GetCatalog(ctx context.Context) (catalog.Catalog, json.RawMessage, error) {
	return call[catalog.Catalog](ctx, c, http.MethodGet, "/admin/v1/catalog", nil)
}

// PutCatalog upserts a catalogue given as JSON; with dryRun it is only checked, and the
// answer's warnings say what would keep nodes from using its routes.
func (c *Client) PutCatalog(ctx context.Context, catalog json.RawMessage, dryRun bool) (adminapi.CatalogResult, json.RawMessage, error) {
	path := "/admin/v1/catalog"
	if dryRun {
		path += "?dry_run=true"
	}
	return call[adminapi.CatalogResult](ctx, c, http.MethodPut, path, catalog)
}

// ListNodes lists data-plane nodes and the snapshot version each applied.
func (c *Client) ListNodes(ctx context.Context) (adminapi.List[adminapi.Node], json.RawMessage, error) {
	return call[adminapi.List[adminapi.Node]](ctx, c, http.MethodGet, "/admin/v1/nodes", nil)
}

// ListRejected lists the latest usage records the control plane refused (limit 1 to 1000).
func (c *Client) ListRejected(ctx context.Context, limit int) (adminapi.RejectedRecords, json.RawMessage, error) {
	return call[adminapi.RejectedRecords](ctx, c, http.MethodGet, "/admin/v1/rejected-records?limit="+strconv.Itoa(limit), nil)
}

// Snapshot describes the current snapshot.
func (c *Client) Snapshot(ctx context.Context) (adminapi.SnapshotInfo, json.RawMessage, error) {
	return call[adminapi.SnapshotInfo](ctx, c, http.MethodGet, "/admin/v1/snapshot", nil)
}

// ListSignups lists access requests, newest first: status pending, approved or rejected
// ("" for all), at most limit (1 to 1000).
func (c *Client) ListSignups(ctx context.Context, status string, limit int) (adminapi.List[adminapi.Signup], json.RawMessage, error) {
	q := url.Values{}
	if status != "" {
		q.Set("status", status)
	}
	q.Set("limit", strconv.Itoa(limit))
	return call[adminapi.List[adminapi.Signup]](ctx, c, http.MethodGet, "/admin/v1/signups?"+q.Encode(), nil)
}

// ApproveSignup approves an access request, creating its account when r asks for it.
func (c *Client) ApproveSignup(ctx context.Context, id string, r adminapi.ApproveSignupRequest) (adminapi.Signup, json.RawMessage, error) {
	return call[adminapi.Signup](ctx, c, http.MethodPost, "/admin/v1/signups/"+esc(id)+"/approve", r)
}

// RejectSignup rejects an access request.
func (c *Client) RejectSignup(ctx context.Context, id string) (adminapi.Signup, json.RawMessage, error) {
	return call[adminapi.Signup](ctx, c, http.MethodPost, "/admin/v1/signups/"+esc(id)+"/reject", nil)
}
