// Package cplink owns a data-plane node's link to its control plane: where the control plane
// is, the node's credentials, the transport (with the link's TLS settings) and the one retry
// and backoff policy, configured once and shared by the snapshot long-poll
// (dataplane/syncclient), the usage batches and the balance watch (dataplane/meter) and the
// account paths the public edge forwards (dataplane/server).
package cplink

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-cleanhttp"

	"github.com/sekgate/gateway/shared/internalapi"
)

// Defaults of Config.
const (
	DefaultRetryWaitMin = 100 * time.Millisecond
	DefaultRetryWaitMax = 15 * time.Second
)

// Config configures a Client.
type Config struct {
	// URL is the control plane's base URL, e.g. https://cp.internal:8081 (required).
	URL string
	// NodeID names the node (X-Node-Id) and NodeToken authenticates it (both required,
	// one line each).
	NodeID, NodeToken string
	// Transport carries the link's TLS settings (default: a pooled transport).
	Transport http.RoundTripper
	// RetryWaitMin and RetryWaitMax bound the exponential backoff between attempts
	// (defaults 100 ms and 15 s).
	RetryWaitMin, RetryWaitMax time.Duration
}

// Client is the node's link to the control plane. It is safe for concurrent use.
type Client struct {
	cfg  Config
	base string
}

// New validates cfg, fills defaults and returns a Client.
func New(cfg Config) (*Client, error) {
	var errs []error
	u, err := url.Parse(strings.TrimRight(cfg.URL, "/"))
	if cfg.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("control plane URL %q is not an http(s) URL", cfg.URL))
	}
	if cfg.NodeID == "" || strings.ContainsAny(cfg.NodeID, "\r\n") {
		errs = append(errs, errors.New("node ID is required (one line)"))
	}
	if cfg.NodeToken == "" || strings.ContainsAny(cfg.NodeToken, "\r\n") {
		errs = append(errs, errors.New("node token is required (one line)"))
	}
	if cfg.RetryWaitMin == 0 {
		cfg.RetryWaitMin = DefaultRetryWaitMin
	}
	if cfg.RetryWaitMax == 0 {
		cfg.RetryWaitMax = max(DefaultRetryWaitMax, cfg.RetryWaitMin)
	}
	if cfg.RetryWaitMin < 0 || cfg.RetryWaitMax < cfg.RetryWaitMin {
		errs = append(errs, fmt.Errorf("retry waits %s..%s are not an interval", cfg.RetryWaitMin, cfg.RetryWaitMax))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("cplink: %w", errors.Join(errs...))
	}
	if cfg.Transport == nil {
		cfg.Transport = cleanhttp.DefaultPooledTransport()
	}
	return &Client{cfg: cfg, base: u.String()}, nil
}

// NodeID is the node's ID.
func (c *Client) NodeID() string { return c.cfg.NodeID }

// URL is the control plane's URL of path (an internalapi path).
func (c *Client) URL(path string) string { return c.base + path }

// Authorize sets the node's credentials on a request's headers.
func (c *Client) Authorize(h http.Header) {
	h.Set("Authorization", "Bearer "+c.cfg.NodeToken)
	h.Set(internalapi.HeaderNodeID, c.cfg.NodeID)
	h.Set(internalapi.HeaderProtocol, nodeProtocol)
}

// nodeProtocol is this build's internal API version as sent on every request.
var nodeProtocol = strconv.Itoa(internalapi.ProtocolVersion)

// HTTPClient returns a client on the link's transport whose requests time out after
// timeout (0: none); a long poll's timeout must exceed the wait it asks for.
func (c *Client) HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{Transport: c.cfg.Transport, Timeout: timeout}
}

// RetryWaitMax is the longest wait between attempts.
func (c *Client) RetryWaitMax() time.Duration { return c.cfg.RetryWaitMax }

// Backoff is the wait before retry number attempt+1 (attempt 0 follows the first failure):
// exponential from RetryWaitMin, with jitter in [d/2, d], capped at RetryWaitMax. A
// Retry-After of a 429 or 503 answer (resp, when not nil) is honoured up to the cap.
func (c *Client) Backoff(attempt int, resp *http.Response) time.Duration {
	lo, hi := c.cfg.RetryWaitMin, c.cfg.RetryWaitMax
	d := hi
	if attempt < 40 {
		if x := lo << max(attempt, 0); x > 0 && x < hi {
			d = x
		}
	}
	if d > 1 {
		d = d/2 + rand.N(d/2+1)
	}
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			if ra := time.Duration(s) * time.Second; ra > d {
				d = min(ra, hi)
			}
		}
	}
	return d
}
