// Package testbox sends the console's test-box requests to a data plane's private test-box
// listener: a chat completion on behalf of an account, authenticated with the test box's
// own token (never a node token) and naming the account in X-Gateway-Test-Box-Account. The
// data plane serves, records (key_id null) and charges it like any other request of the
// account.
package testbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/internalapi"
)

// Config configures a Client.
type Config struct {
	// URL is the base URL of the data plane's test-box listener (--test-box-listen there):
	// https, or plain http only to a loopback address, since the token goes with every
	// request. Required.
	URL string
	// Token is the test box's own token, the data plane's --test-box-token. Required.
	Token string
	// HTTP is the client (default: one with a 2-minute timeout).
	HTTP *http.Client
}

// Client sends test-box requests.
type Client struct {
	cfg Config
}

// New validates cfg.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("testbox: URL %q is not an http(s) URL", cfg.URL)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return nil, fmt.Errorf("testbox: URL %q sends the test-box token in clear: use https, or http to a loopback address", cfg.URL)
	}
	if cfg.Token == "" {
		return nil, errors.New("testbox: a test-box token is required")
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 2 * time.Minute}
	}
	return &Client{cfg: cfg}, nil
}

// maxAnswer bounds the answer kept (a test-box answer is short: max_tokens is bounded).
const maxAnswer = 1 << 20

// Chat sends a chat completion request body for the account and returns the data plane's
// status, request ID and body (JSON; a non-JSON body is wrapped as a JSON string).
func (c *Client) Chat(ctx context.Context, accountID string, body []byte) (adminapi.TestBoxResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return adminapi.TestBoxResult{}, err
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(internalapi.HeaderTestBoxAccount, accountID)
	res, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return adminapi.TestBoxResult{}, fmt.Errorf("test box: %w", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
	if err != nil {
		return adminapi.TestBoxResult{}, fmt.Errorf("test box: read answer: %w", err)
	}
	if !json.Valid(b) {
		b, _ = json.Marshal(string(b))
	}
	return adminapi.TestBoxResult{Status: res.StatusCode, RequestID: res.Header.Get(internalapi.HeaderRequestID), Body: b}, nil
}

// loopback reports whether host is localhost or a loopback address.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}
