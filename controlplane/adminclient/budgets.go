package adminclient

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// ListBudgets returns the account's budget and its keys', with the current period's spend.
func (c *Client) ListBudgets(ctx context.Context, accountID string) (adminapi.List[adminapi.Budget], json.RawMessage, error) {
	return call[adminapi.List[adminapi.Budget]](ctx, c, http.MethodGet, "/admin/v1/accounts/"+esc(accountID)+"/budgets", nil)
}

// SetBudget sets (req non-nil) or clears (nil) the budget of an account (key false) or a
// key.
func (c *Client) SetBudget(ctx context.Context, key bool, id string, req *adminapi.SetBudgetRequest) (adminapi.BudgetState, json.RawMessage, error) {
	path := "/admin/v1/accounts/" + esc(id) + "/budget"
	if key {
		path = "/admin/v1/keys/" + esc(id) + "/budget"
	}
	if req == nil {
		return call[adminapi.BudgetState](ctx, c, http.MethodDelete, path, nil)
	}
	return call[adminapi.BudgetState](ctx, c, http.MethodPut, path, req)
}
