package cplink

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestNewChecksConfig(t *testing.T) {
	good := Config{URL: "https://cp.example:8081/", NodeID: "n1", NodeToken: "tok"}
	c, err := New(good)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.URL("/internal/v1/usage"); got != "https://cp.example:8081/internal/v1/usage" {
		t.Errorf("URL %q", got)
	}
	h := http.Header{}
	c.Authorize(h)
	if h.Get("Authorization") != "Bearer tok" || h.Get("X-Node-Id") != "n1" {
		t.Errorf("headers %v", h)
	}
	for name, mut := range map[string]func(*Config){
		"no URL":        func(c *Config) { c.URL = "" },
		"not http":      func(c *Config) { c.URL = "ftp://cp" },
		"no host":       func(c *Config) { c.URL = "http://" },
		"no node":       func(c *Config) { c.NodeID = "" },
		"two-line node": func(c *Config) { c.NodeID = "a\nb" },
		"no token":      func(c *Config) { c.NodeToken = "" },
		"bad waits":     func(c *Config) { c.RetryWaitMin, c.RetryWaitMax = time.Second, time.Millisecond },
	} {
		cfg := good
		mut(&cfg)
		if _, err := New(cfg); err == nil || !strings.HasPrefix(err.Error(), "cplink: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The one policy: exponential from the minimum with jitter in [d/2, d], capped, a
// Retry-After of 429 and 503 honoured up to the cap and ignored otherwise.
func TestBackoff(t *testing.T) {
	c, err := New(Config{URL: "http://cp", NodeID: "n", NodeToken: "t", RetryWaitMin: 100 * time.Millisecond, RetryWaitMax: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for attempt, full := range []time.Duration{100, 200, 400, 800, 1600, 2000, 2000} {
		full *= time.Millisecond
		if attempt == 6 {
			attempt = 1000 // no overflow
		}
		for range 50 {
			if d := c.Backoff(attempt, nil); d < full/2 || d > full {
				t.Fatalf("attempt %d: %s outside [%s, %s]", attempt, d, full/2, full)
			}
		}
	}
	ra := func(status int, secs string) *http.Response {
		return &http.Response{StatusCode: status, Header: http.Header{"Retry-After": {secs}}}
	}
	if d := c.Backoff(0, ra(503, "1")); d != time.Second {
		t.Errorf("503 Retry-After 1: %s", d)
	}
	if d := c.Backoff(0, ra(429, "60")); d != 2*time.Second {
		t.Errorf("429 Retry-After beyond the cap: %s", d)
	}
	if d := c.Backoff(0, ra(500, "60")); d > 100*time.Millisecond {
		t.Errorf("500 Retry-After honoured: %s", d)
	}
}
