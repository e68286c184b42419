package adminclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// ListAlertRules returns the alert rules.
func (c *Client) ListAlertRules(ctx context.Context) (adminapi.List[adminapi.AlertRule], json.RawMessage, error) {
	return call[adminapi.List[adminapi.AlertRule]](ctx, c, http.MethodGet, "/admin/v1/alert-rules", nil)
}

// CreateAlertRule creates a rule; the answer holds its signing secret, this once.
func (c *Client) CreateAlertRule(ctx context.Context, req adminapi.CreateAlertRuleRequest) (adminapi.AlertRule, json.RawMessage, error) {
	return call[adminapi.AlertRule](ctx, c, http.MethodPost, "/admin/v1/alert-rules", req)
}

// SetAlertRuleEnabled turns a rule on or off.
func (c *Client) SetAlertRuleEnabled(ctx context.Context, id string, enabled bool) (adminapi.AlertRule, json.RawMessage, error) {
	return call[adminapi.AlertRule](ctx, c, http.MethodPatch, "/admin/v1/alert-rules/"+esc(id), adminapi.PatchAlertRuleRequest{Enabled: &enabled})
}

// DeleteAlertRule deletes a rule with its deliveries.
func (c *Client) DeleteAlertRule(ctx context.Context, id string) (adminapi.AlertRule, json.RawMessage, error) {
	return call[adminapi.AlertRule](ctx, c, http.MethodDelete, "/admin/v1/alert-rules/"+esc(id), nil)
}

// ListAlertDeliveries returns the most recent deliveries (of one rule, or of all for rule
// empty), newest first.
func (c *Client) ListAlertDeliveries(ctx context.Context, rule string, limit int) (adminapi.List[adminapi.AlertDelivery], json.RawMessage, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if rule != "" {
		q.Set("rule", rule)
	}
	return call[adminapi.List[adminapi.AlertDelivery]](ctx, c, http.MethodGet, "/admin/v1/alert-deliveries?"+q.Encode(), nil)
}
