package server

import (
	"strconv"
	"testing"
	"time"

	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Inference answers carry the node's request-rate view: the bucket's size, what is left
// after this request, and when it is full again; a rate refusal shows 0 left.
func TestRateLimitHeaders(t *testing.T) {
	up := startSim(t, "up", simulator.Knobs{})
	g := startSimGateway(t, []snapshot.Route{chatRoute("a", "p", up.BaseURL(), "SE", 0, 1)})
	if r := g.post(t, g.Keys.SE, chatPlainReq); r.Status != 200 || r.Header.Get("X-Ratelimit-Limit-Requests") != "" {
		t.Fatalf("without a rate limit: %d, headers %v", r.Status, r.Header)
	}
	g.withLimits(t, &snapshot.Limits{RequestsPerSecond: 0.5, Burst: 3}, nil, snapshot.Limits{})
	for i, want := range []string{"2", "1", "0"} {
		r := g.post(t, g.Keys.SE, chatPlainReq)
		if r.Status != 200 {
			t.Fatalf("request %d: %d", i, r.Status)
		}
		if got := r.Header.Get("X-Ratelimit-Remaining-Requests"); got != want || r.Header.Get("X-Ratelimit-Limit-Requests") != "3" {
			t.Errorf("request %d: remaining %q limit %q, want %s of 3", i, got, r.Header.Get("X-Ratelimit-Limit-Requests"), want)
		}
		reset, err := time.ParseDuration(r.Header.Get("X-Ratelimit-Reset-Requests"))
		if err != nil || reset <= 0 || reset > 6*time.Second {
			t.Errorf("request %d: reset %q", i, r.Header.Get("X-Ratelimit-Reset-Requests"))
		}
	}
	r := g.post(t, g.Keys.SE, chatPlainReq)
	if r.Status != 429 || r.Header.Get("X-Ratelimit-Remaining-Requests") != "0" || r.Header.Get("X-Ratelimit-Limit-Requests") != "3" {
		t.Fatalf("refusal: %d, remaining %q", r.Status, r.Header.Get("X-Ratelimit-Remaining-Requests"))
	}
	if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra < 1 {
		t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
	}
}
