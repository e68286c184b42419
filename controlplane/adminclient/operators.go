package adminclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// AuditQuery selects audit entries; empty fields do not filter.
type AuditQuery struct {
	Target, Actor string
	Before        int64
	Limit         int
}

// ListAudit reads a page of the audit log, newest first.
func (c *Client) ListAudit(ctx context.Context, q AuditQuery) (adminapi.AuditPage, json.RawMessage, error) {
	v := url.Values{}
	if q.Target != "" {
		v.Set("target", q.Target)
	}
	if q.Actor != "" {
		v.Set("actor", q.Actor)
	}
	if q.Before > 0 {
		v.Set("before", strconv.FormatInt(q.Before, 10))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return call[adminapi.AuditPage](ctx, c, http.MethodGet, "/admin/v1/audit?"+v.Encode(), nil)
}

// CreateOperator adds a named operator with a role and password.
func (c *Client) CreateOperator(ctx context.Context, r adminapi.CreateOperatorRequest) (adminapi.Operator, json.RawMessage, error) {
	return call[adminapi.Operator](ctx, c, http.MethodPost, "/admin/v1/operators", r)
}

// ListOperators lists operators.
func (c *Client) ListOperators(ctx context.Context) (adminapi.List[adminapi.Operator], json.RawMessage, error) {
	return call[adminapi.List[adminapi.Operator]](ctx, c, http.MethodGet, "/admin/v1/operators", nil)
}

// PatchOperator changes an operator's role, password or disabled state.
func (c *Client) PatchOperator(ctx context.Context, name string, r adminapi.PatchOperatorRequest) (adminapi.Operator, json.RawMessage, error) {
	return call[adminapi.Operator](ctx, c, http.MethodPatch, "/admin/v1/operators/"+esc(name), r)
}

// Adjust appends a manual adjustment of either sign with its reason.
func (c *Client) Adjust(ctx context.Context, accountID string, r adminapi.AdjustmentRequest) (adminapi.Credit, json.RawMessage, error) {
	return call[adminapi.Credit](ctx, c, http.MethodPost, "/admin/v1/accounts/"+esc(accountID)+"/adjustments", r)
}
