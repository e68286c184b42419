package server

import (
	"strconv"
	"testing"
	"time"

	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/snapshot"
)

func TestAppendResetDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", -time.Second: "0s", time.Nanosecond: "1ms", 20 * time.Millisecond: "20ms", 999 * time.Millisecond: "999ms",
		time.Second: "1s", 1500 * time.Millisecond: "1.5s", 1234567 * time.Microsecond: "1.235s", 90 * time.Second: "1m30s",
		6 * time.Minute: "6m0s", time.Hour + 5*time.Second: "1h0m5s", 2*time.Hour + 3*time.Minute + 40*time.Millisecond: "2h3m0.04s",
	} {
		if got := string(appendResetDuration([]byte("x"), d)); got != "x"+want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}

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
