// Package adminclient is a small client of the control plane's admin API (/admin/v1/*):
// JSON over HTTP with a bearer admin token, errors in the gateway's error envelope.
package adminclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Config configures a Client.
type Config struct {
	// BaseURL is the control plane's admin listener, e.g. http://127.0.0.1:8082 (required).
	BaseURL string
	// Token is the credential sent as "Authorization: Bearer <token>": an operator token
	// (gwo_...) or the admin token.
	Token string
	// HTTP is the client used (default: one with a 30 s timeout).
	HTTP *http.Client
}

// Client calls the admin API.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("admin URL %q: want http(s)://host[:port]", cfg.BaseURL)
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	return &Client{base: strings.TrimRight(cfg.BaseURL, "/"), token: cfg.Token, http: cfg.HTTP}, nil
}

// Error is an error answer of the admin API.
type Error struct {
	Status  int
	Type    string
	Code    string
	Message string
	Param   string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	var extra []string
	if e.Type != "" {
		extra = append(extra, "type "+e.Type)
	}
	if e.Code != "" {
		extra = append(extra, "code "+e.Code)
	}
	if e.Param != "" {
		extra = append(extra, "param "+e.Param)
	}
	if len(extra) > 0 {
		b.WriteString(" (" + strings.Join(extra, ", ") + ")")
	}
	return b.String()
}

// ErrUnauthorized wraps 401 answers (no valid credential), ErrForbidden 403 answers (a
// credential whose role does not allow the action), so callers can hint at either.
var (
	ErrUnauthorized = errors.New("credential refused")
	ErrForbidden    = errors.New("not allowed for this role")
)

func (e *Error) Unwrap() error {
	switch e.Status {
	case http.StatusUnauthorized:
		return ErrUnauthorized
	case http.StatusForbidden:
		return ErrForbidden
	}
	return nil
}

// Do sends method path with body (JSON-encoded unless nil, or sent as is when it is a
// json.RawMessage) and returns the raw JSON answer. Non-2xx answers become *Error.
func (c *Client) Do(ctx context.Context, method, path string, body any) (json.RawMessage, error) {
	var rd io.Reader
	if body != nil {
		raw, ok := body.(json.RawMessage)
		if !ok {
			var err error
			if raw, err = json.Marshal(body); err != nil {
				return nil, fmt.Errorf("%s %s: encode body: %w", method, path, err)
			}
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, decodeError(resp.StatusCode, raw)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("%s %s: answer is not JSON: %.200q", method, path, raw)
	}
	return raw, nil
}

func decodeError(status int, raw []byte) *Error {
	var env struct {
		Error struct {
			Type    string  `json:"type"`
			Message string  `json:"message"`
			Code    *string `json:"code"`
			Param   *string `json:"param"`
		} `json:"error"`
	}
	e := &Error{Status: status}
	if json.Unmarshal(raw, &env) == nil && (env.Error.Message != "" || env.Error.Type != "") {
		e.Type, e.Message = env.Error.Type, env.Error.Message
		if env.Error.Code != nil {
			e.Code = *env.Error.Code
		}
		if env.Error.Param != nil {
			e.Param = *env.Error.Param
		}
		return e
	}
	if msg := strings.TrimSpace(string(raw)); msg != "" {
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		e.Message = msg
	}
	return e
}

// get decodes the answer of method path into T and returns it with the raw JSON.
func call[T any](ctx context.Context, c *Client, method, path string, body any) (T, json.RawMessage, error) {
	var v T
	raw, err := c.Do(ctx, method, path, body)
	if err != nil {
		return v, nil, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, raw, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return v, raw, nil
}

func esc(s string) string { return url.PathEscape(s) }
