package adminclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// RecordQuery selects request records of any account; empty fields do not filter. KeyID
// "none" selects the console's test-box records; From and To are RFC 3339 times;
// Underreported selects the records whose provider reported less output than it
// delivered (routing.output_underreported).
type RecordQuery struct {
	AccountID, KeyID, Model, Result, From, To, After string
	Limit                                            int
	Underreported                                    bool
}

// ListRecords reads a page of request records, newest first.
func (c *Client) ListRecords(ctx context.Context, q RecordQuery) (adminapi.RecordPage, json.RawMessage, error) {
	v := url.Values{}
	for k, val := range map[string]string{"account_id": q.AccountID, "key_id": q.KeyID, "model": q.Model,
		"result": q.Result, "from": q.From, "to": q.To, "after": q.After} {
		if val != "" {
			v.Set(k, val)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Underreported {
		v.Set("output_underreported", "true")
	}
	return call[adminapi.RecordPage](ctx, c, http.MethodGet, "/admin/v1/records?"+v.Encode(), nil)
}

// Usage reads an account's usage per day and model over the last days days (0: the
// server's default).
func (c *Client) Usage(ctx context.Context, accountID string, days int) (adminapi.UsageReport, json.RawMessage, error) {
	q := ""
	if days > 0 {
		q = "?days=" + strconv.Itoa(days)
	}
	return call[adminapi.UsageReport](ctx, c, http.MethodGet, "/admin/v1/accounts/"+url.PathEscape(accountID)+"/usage"+q, nil)
}

// Ledger reads a page of an account's ledger, newest first: entries older than before
// (0: the newest), at most limit (0: the server's default).
func (c *Client) Ledger(ctx context.Context, accountID string, before int64, limit int) (adminapi.LedgerPage, json.RawMessage, error) {
	v := url.Values{}
	if before > 0 {
		v.Set("before", strconv.FormatInt(before, 10))
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	return call[adminapi.LedgerPage](ctx, c, http.MethodGet, "/admin/v1/accounts/"+url.PathEscape(accountID)+"/ledger?"+v.Encode(), nil)
}

// Refusals reads an account's requests refused before routing over the last days days (0:
// the server's default, 7).
func (c *Client) Refusals(ctx context.Context, accountID string, days int) (adminapi.RefusalReport, json.RawMessage, error) {
	q := ""
	if days > 0 {
		q = "?days=" + strconv.Itoa(days)
	}
	return call[adminapi.RefusalReport](ctx, c, http.MethodGet, "/admin/v1/accounts/"+url.PathEscape(accountID)+"/refusals"+q, nil)
}

// SeriesQuery selects a series of GET /admin/v1/series; empty fields take the server's
// defaults (dimension all, the last hour, a step giving at most 360 points). From and To
// are RFC 3339 times, Step a whole number of minutes (15m).
type SeriesQuery struct {
	Dimension, Key, From, To, Step string
}

// Series reads the live service view: a per-minute series added up into steps.
func (c *Client) Series(ctx context.Context, q SeriesQuery) (adminapi.Series, json.RawMessage, error) {
	v := url.Values{}
	for k, val := range map[string]string{"dimension": q.Dimension, "key": q.Key, "from": q.From, "to": q.To, "step": q.Step} {
		if val != "" {
			v.Set(k, val)
		}
	}
	return call[adminapi.Series](ctx, c, http.MethodGet, "/admin/v1/series?"+v.Encode(), nil)
}
