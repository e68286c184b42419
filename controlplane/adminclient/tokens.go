package adminclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// Whoami tells who the client's credential acts as.
func (c *Client) Whoami(ctx context.Context) (adminapi.Whoami, json.RawMessage, error) {
	return call[adminapi.Whoami](ctx, c, http.MethodGet, "/admin/v1/whoami", nil)
}

// CreateToken makes an operator API token; the answer holds its secret, shown this once.
func (c *Client) CreateToken(ctx context.Context, r adminapi.CreateTokenRequest) (adminapi.CreatedToken, json.RawMessage, error) {
	return call[adminapi.CreatedToken](ctx, c, http.MethodPost, "/admin/v1/tokens", r)
}

// ListTokens lists the caller's operator tokens (an admin: everyone's, or operator's when
// it is not empty).
func (c *Client) ListTokens(ctx context.Context, operator string) (adminapi.List[adminapi.OperatorToken], json.RawMessage, error) {
	path := "/admin/v1/tokens"
	if operator != "" {
		path += "?" + url.Values{"operator": {operator}}.Encode()
	}
	return call[adminapi.List[adminapi.OperatorToken]](ctx, c, http.MethodGet, path, nil)
}

// RevokeToken revokes an operator token for good.
func (c *Client) RevokeToken(ctx context.Context, id string) (adminapi.OperatorToken, json.RawMessage, error) {
	return call[adminapi.OperatorToken](ctx, c, http.MethodPost, "/admin/v1/tokens/"+esc(id)+"/revoke", nil)
}
