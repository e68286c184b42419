package server

import (
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// TestFailoverBeforeFirstByte: each failure kind on the preferred route moves the request
// to the next eligible route, streaming or not; the record lists both attempts.
func TestFailoverBeforeFirstByte(t *testing.T) {
	kinds := []struct {
		name   string
		knobs  simulator.Knobs
		dead   bool // connection refused
		slow   bool // route timeouts shorter than the simulator's latency
		status int  // upstream status recorded on the failed attempt
		class  string
	}{
		{name: "connect refused", dead: true, class: "connect"},
		{name: "timeout", knobs: simulator.Knobs{LatencyMS: 3000}, slow: true, class: "timeout"},
		{name: "429", knobs: simulator.Knobs{Status: 429, RetryAfterS: 3}, status: 429},
		{name: "502", knobs: simulator.Knobs{Status: 502}, status: 502},
		{name: "503", knobs: simulator.Knobs{Status: 503}, status: 503},
		{name: "504", knobs: simulator.Knobs{Status: 504}, status: 504},
	}
	good := startSim(t, "good", simulator.Knobs{})
	for _, k := range kinds {
		for _, stream := range []bool{false, true} {
			name := k.name
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				bad := deadURL(t)
				if !k.dead {
					bad = startSim(t, "bad", k.knobs).BaseURL()
				}
				rb := chatRoute("rt_bad", "bad-se", bad, "SE", 0, 1)
				if k.slow {
					rb.FirstByteTimeoutMS, rb.TotalTimeoutMS = 150, 150
				}
				g := startSimGateway(t, []snapshot.Route{rb, chatRoute("rt_good", "good-se", good.BaseURL(), "SE", 1, 1)})
				body := chatPlainReq
				if stream {
					body = chatStreamReq
				}
				t0 := time.Now()
				r := g.post(t, g.Keys.SE, body)
				if r.Status != 200 {
					t.Fatalf("status %d: %s", r.Status, r.Body)
				}
				if stream != strings.Contains(r.Body, "data: [DONE]") {
					t.Fatalf("body %q", r.Body)
				}
				if p := r.Header.Get("X-Service-Provider"); p != "good-se" {
					t.Errorf("X-Service-Provider %q", p)
				}
				// The slow upstream answers at 3 s: an answer within 2.5 s, however busy
				// the machine, did not wait for it.
				if k.slow && time.Since(t0) > 2500*time.Millisecond {
					t.Errorf("timeout took %v", time.Since(t0))
				}
				rec := g.record(t, 1)
				a := rec.Routing.Attempts
				if rec.Status != 200 || rec.Result != usage.ResultOK || len(a) != 2 || rec.Provider != "good-se" {
					t.Fatalf("record %+v attempts %+v", rec, a)
				}
				if a[0].Route != "rt_bad" || a[0].Status != k.status || a[0].Error != k.class || a[1].Route != "rt_good" || a[1].Status != 200 {
					t.Errorf("attempts %+v", a)
				}
			})
		}
	}
}

// TestFailoverLimits: a client error is not retried elsewhere; the number of attempts is
// bounded by MaxAttempts; the final status comes from the last attempt.
func TestFailoverLimits(t *testing.T) {
	s503 := startSim(t, "s503", simulator.Knobs{Status: 503})
	s400 := startSim(t, "s400", simulator.Knobs{Status: 400})
	good := startSim(t, "good", simulator.Knobs{})
	t.Run("400 not retried", func(t *testing.T) {
		g := startSimGateway(t, []snapshot.Route{
			chatRoute("a", "p400", s400.BaseURL(), "SE", 0, 1), chatRoute("b", "good", good.BaseURL(), "SE", 1, 1)})
		r := g.post(t, g.Keys.SE, chatPlainReq)
		checkEnvelope(t, r, 400, "provider_rejected")
		if n := good.Stats().Requests; n != 0 {
			t.Errorf("client error retried on another route (%d requests)", n)
		}
		if rec := g.record(t, 1); len(rec.Routing.Attempts) != 1 || rec.Result != usage.ResultRejected {
			t.Errorf("record %+v", rec)
		}
	})
	t.Run("max attempts", func(t *testing.T) {
		good.ResetStats()
		g := startSimGateway(t, []snapshot.Route{
			chatRoute("a", "p1", s503.BaseURL(), "SE", 0, 1), chatRoute("b", "p2", s503.BaseURL(), "SE", 1, 1),
			chatRoute("c", "good", good.BaseURL(), "SE", 2, 1)}, func(c *Config) { c.MaxAttempts = 2 })
		r := g.post(t, g.Keys.SE, chatPlainReq)
		checkEnvelope(t, r, 503, "no_route_available")
		if r.Header.Get("Retry-After") == "" || r.Header.Get("X-Service-Provider") != "p2" {
			t.Errorf("headers %v", r.Header)
		}
		if n := good.Stats().Requests; n != 0 {
			t.Errorf("third route tried with MaxAttempts 2")
		}
		if rec := g.record(t, 1); len(rec.Routing.Attempts) != 2 || rec.Status != 503 {
			t.Errorf("record %+v", rec)
		}
	})
}

// TestResidencyNeverCrossed: an se account whose Swedish routes all fail gets an error,
// never an answer from the healthy German route — whatever headers or body fields the
// client sends to ask for another policy — while an eu account is served by that route.
func TestResidencyNeverCrossed(t *testing.T) {
	de := startSim(t, "de", simulator.Knobs{})
	for _, c := range []struct {
		name        string
		seKnobs     simulator.Knobs
		dead        bool
		status      int
		code        string
		retryHdr    bool
		breakOpen   bool
		unreachable bool
	}{
		{name: "se routes answer 503", seKnobs: simulator.Knobs{Status: 503}, status: 503, code: "no_route_available", retryHdr: true},
		// A route known unreachable answers like a misconfigured one, breakers open or not.
		{name: "se routes refuse connections", dead: true, status: 503, code: "no_route_available", retryHdr: true, unreachable: true},
		{name: "se breakers open", dead: true, status: 503, code: "no_route_available", retryHdr: true, breakOpen: true, unreachable: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			de.ResetStats()
			u1, u2 := deadURL(t), deadURL(t)
			if !c.dead {
				u1, u2 = startSim(t, "se1", c.seKnobs).BaseURL(), startSim(t, "se2", c.seKnobs).BaseURL()
			}
			// The German route is preferred and heaviest: only the policy keeps it out.
			g := startSimGateway(t, []snapshot.Route{
				chatRoute("rt_de", "prov-de", de.BaseURL(), "DE", 0, 100),
				chatRoute("rt_se1", "prov-se1", u1, "SE", 1, 1),
				chatRoute("rt_se2", "prov-se2", u2, "SE", 1, 1),
			}, func(cfg *Config) { cfg.Health = nil }) // default breaker: 5 failures
			if c.breakOpen {
				for range 6 {
					g.post(t, g.Keys.SE, chatPlainReq)
				}
			}
			overrides := [][]string{
				nil,
				{"X-Service-Residency", "eu"},
				{"X-Service-Policy", "any"},
				{"X-Service-Residency", "de-1", "X-Service-Provider", "prov-de"},
			}
			bodies := []string{chatPlainReq, chatStreamReq,
				`{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"residency":"any"}`,
				`{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"residency":"eu","policy":"any","stream":true}`}
			for _, hdr := range overrides {
				for _, body := range bodies {
					r := g.post(t, g.Keys.SE, body, hdr...)
					checkEnvelope(t, r, c.status, c.code)
					if msg := gjson.Get(r.Body, "error.message").Str; c.unreachable != strings.Contains(msg, "cannot be reached") {
						t.Errorf("message %q", msg)
					}
					if c.retryHdr && r.Header.Get("Retry-After") == "" {
						t.Errorf("no Retry-After on %d", r.Status)
					}
					if res := r.Header.Get("X-Service-Residency"); strings.HasPrefix(res, "de") {
						t.Fatalf("se account answered from %q", res)
					}
					if pol := r.Header.Get("X-Service-Policy"); pol != "se" {
						t.Errorf("X-Service-Policy %q", pol)
					}
				}
			}
			if n := de.Stats().Requests; n != 0 {
				t.Fatalf("the German route received %d requests of an se account", n)
			}
			for _, rec := range g.Meter.Records() {
				for _, a := range rec.Routing.Attempts {
					if a.Route == "rt_de" {
						t.Fatalf("se record lists an attempt on rt_de: %+v", rec)
					}
				}
			}
			// The German route is healthy: an eu account is served by it.
			if r := g.post(t, g.Keys.EU, chatPlainReq); r.Status != 200 || r.Header.Get("X-Service-Provider") != "prov-de" {
				t.Fatalf("eu account: %d %s", r.Status, r.Body)
			}
		})
	}
}

// TestNoFailoverAfterFirstByte: a stream that breaks after its first events ends with an
// error event instead of its terminal event; the request is not moved to the healthy route.
func TestNoFailoverAfterFirstByte(t *testing.T) {
	breaking := startSim(t, "breaking", simulator.Knobs{FailAfterEvents: 3})
	good := startSim(t, "good", simulator.Knobs{})
	g := startSimGateway(t, []snapshot.Route{
		chatRoute("a", "breaking", breaking.BaseURL(), "SE", 0, 1), chatRoute("b", "good", good.BaseURL(), "SE", 1, 1)})
	r := g.post(t, g.Keys.SE, chatStreamReq)
	if r.Status != 200 || r.Header.Get("X-Service-Provider") != "breaking" {
		t.Fatalf("%d %v", r.Status, r.Header)
	}
	if strings.Contains(r.Body, "[DONE]") || strings.Count(r.Body, "data: ") != 4 ||
		!strings.HasSuffix(r.Body, "data: "+string(streamCutError)+"\n\n") {
		t.Fatalf("broken stream relayed as %q", r.Body)
	}
	rec := g.record(t, 1)
	if len(rec.Routing.Attempts) != 1 || rec.Result != usage.ResultIncomplete || rec.Status != 200 {
		t.Errorf("record %+v", rec)
	}
	if n := good.Stats().Requests; n != 0 {
		t.Errorf("stream continued on another route (%d requests)", n)
	}
}

// TestUpstream429RetryAfter: the provider's 429 and Retry-After reach the client when no
// other route answers.
func TestUpstream429RetryAfter(t *testing.T) {
	with := startSim(t, "with", simulator.Knobs{Status: 429, RetryAfterS: 7})
	without := startSim(t, "without", simulator.Knobs{Status: 429})
	for _, c := range []struct {
		name, url, retryAfter string
	}{{"with Retry-After", with.BaseURL(), "7"}, {"without", without.BaseURL(), ""}} {
		t.Run(c.name, func(t *testing.T) {
			g := startSimGateway(t, []snapshot.Route{chatRoute("a", "p", c.url, "SE", 0, 1)})
			// More than the breaker's 3 failures: a 429 does not open it (the client keeps
			// getting the provider's 429 and Retry-After, not a 503).
			for _, body := range []string{chatPlainReq, chatStreamReq, chatPlainReq, chatStreamReq, chatPlainReq} {
				r := g.post(t, g.Keys.SE, body)
				checkEnvelope(t, r, 429, "provider_rate_limited")
				if got := r.Header.Get("Retry-After"); got != c.retryAfter {
					t.Errorf("Retry-After %q, want %q", got, c.retryAfter)
				}
			}
			if rec := g.record(t, 1); rec.Result != usage.ResultRateLimited || rec.Routing.Attempts[0].Status != 429 {
				t.Errorf("record %+v", rec)
			}
			if st := g.Health.State(g.route(t, "a")); st != "closed" {
				t.Errorf("breaker %s after 429s", st)
			}
		})
	}
}

// TestRequestDeadline: the total deadline ends the request across attempts even when the
// routes' own timeouts are longer.
func TestRequestDeadline(t *testing.T) {
	slow := startSim(t, "slow", simulator.Knobs{LatencyMS: 3000})
	routes := []snapshot.Route{
		chatRoute("a", "p1", slow.BaseURL(), "SE", 0, 1), chatRoute("b", "p2", slow.BaseURL(), "SE", 1, 1),
		chatRoute("c", "p3", slow.BaseURL(), "SE", 2, 1)}
	g := startSimGateway(t, routes, func(c *Config) { c.RequestTimeout = 400 * time.Millisecond })
	for i, body := range []string{chatPlainReq, chatStreamReq} {
		t0 := time.Now()
		r := g.post(t, g.Keys.SE, body)
		took := time.Since(t0)
		checkEnvelope(t, r, 504, "provider_timeout")
		// The upstream answers at 3 s: an answer within 2.5 s, however busy the machine,
		// was cut by the 400 ms deadline.
		if took < 350*time.Millisecond || took > 2500*time.Millisecond {
			t.Errorf("answered after %v, deadline 400ms", took)
		}
		rec := g.record(t, i+1)
		if rec.Result != usage.ResultTimeout || len(rec.Routing.Attempts) != 1 || rec.Routing.Attempts[0].Error != "timeout" {
			t.Errorf("record %+v", rec)
		}
	}
}

// TestBreakerOpensAndRecovers: after consecutive failures the failing route is skipped
// (one attempt per request instead of two); once it recovers, a half-open probe closes it.
func TestBreakerOpensAndRecovers(t *testing.T) {
	flaky := startSim(t, "flaky", simulator.Knobs{Status: 503})
	good := startSim(t, "good", simulator.Knobs{})
	g := startSimGateway(t, []snapshot.Route{
		chatRoute("a", "flaky", flaky.BaseURL(), "SE", 0, 1), chatRoute("b", "good", good.BaseURL(), "SE", 1, 1)})
	ra := g.route(t, "a")
	n := 0
	for range 3 { // 3 consecutive failures open it
		n++
		if r := g.post(t, g.Keys.SE, chatPlainReq); r.Status != 200 {
			t.Fatalf("status %d", r.Status)
		}
		if a := g.record(t, n).Routing.Attempts; len(a) != 2 {
			t.Fatalf("attempts %+v", a)
		}
	}
	if st := g.Health.State(ra); st != "open" {
		t.Fatalf("breaker %s after 3 failures", st)
	}
	before := flaky.Stats().Requests
	for range 5 {
		n++
		if r := g.post(t, g.Keys.SE, chatPlainReq); r.Status != 200 || r.Header.Get("X-Service-Provider") != "good" {
			t.Fatalf("status %d provider %s", r.Status, r.Header.Get("X-Service-Provider"))
		}
		if a := g.record(t, n).Routing.Attempts; len(a) != 1 || a[0].Route != "b" {
			t.Fatalf("open route attempted: %+v", a)
		}
	}
	if flaky.Stats().Requests != before {
		t.Fatal("requests reached a route with an open breaker")
	}
	// Still failing when the probe comes: the probe fails over and the breaker reopens.
	waitBreaker(t, g.Health.State, ra, "half-open")
	n++
	if r := g.post(t, g.Keys.SE, chatPlainReq); r.Status != 200 {
		t.Fatalf("probe request: %d", r.Status)
	}
	if a := g.record(t, n).Routing.Attempts; len(a) != 2 || a[0].Route != "a" {
		t.Fatalf("probe attempts %+v", a)
	}
	if st := g.Health.State(ra); st != "open" {
		t.Fatalf("breaker %s after a failed probe", st)
	}
	// Recovered: the next probe succeeds and closes the breaker; traffic returns.
	flaky.SetKnobs(simulator.Knobs{})
	waitBreaker(t, g.Health.State, ra, "half-open")
	n++
	if r := g.post(t, g.Keys.SE, chatPlainReq); r.Status != 200 || r.Header.Get("X-Service-Provider") != "flaky" {
		t.Fatalf("probe: %d from %s", r.Status, r.Header.Get("X-Service-Provider"))
	}
	if st := g.Health.State(ra); st != "closed" {
		t.Fatalf("breaker %s after a successful probe", st)
	}
	if g.Health.Opened() != 2 {
		t.Errorf("opened %d times, want 2", g.Health.Opened())
	}
}

// TestErrorBodyOnFailureIsEnvelope: whatever the upstream failure, the client gets the
// JSON envelope with the request ID and the route headers of the last attempt.
func TestErrorBodyOnFailureIsEnvelope(t *testing.T) {
	malformed := startSim(t, "malformed", simulator.Knobs{Malformed: true})
	g := startSimGateway(t, []snapshot.Route{chatRoute("a", "mal", malformed.BaseURL(), "SE", 0, 1)})
	r := g.post(t, g.Keys.SE, chatPlainReq)
	checkEnvelope(t, r, 502, "provider_error")
	if r.Header.Get("X-Service-Provider") != "mal" || r.Header.Get("X-Service-Residency") != "se-1" {
		t.Errorf("headers %v", r.Header)
	}
	if gjson.Get(r.Body, "error.message").Str == "" {
		t.Errorf("body %s", r.Body)
	}
	if a := g.record(t, 1).Routing.Attempts[0]; a.Error != "invalid_response" || a.Status != 200 {
		t.Errorf("attempt %+v", a)
	}
}

// TestBrokenStreamDoesNotPoisonPool: an upstream that closes its connection mid-stream may
// look like a clean end of body to the client library; the connection must not go back to
// the pool, so the next request on the same (only) route succeeds.
func TestBrokenStreamDoesNotPoisonPool(t *testing.T) {
	s := startSim(t, "only", simulator.Knobs{})
	g := startSimGateway(t, []snapshot.Route{chatRoute("a", "only", s.BaseURL(), "SE", 0, 1)})
	broken := strings.Replace(chatStreamReq, `"stream":true`, `"stream":true,"sim":{"fail_after_events":2}`, 1)
	if broken == chatStreamReq {
		t.Fatal("test body not rewritten")
	}
	for i := 0; i < 3; i++ {
		if r := g.post(t, g.Keys.SE, broken); r.Status != 200 || strings.Contains(r.Body, "[DONE]") {
			t.Fatalf("broken stream: %d %q", r.Status, r.Body)
		}
		if r := g.post(t, g.Keys.SE, chatPlainReq); r.Status != 200 {
			t.Fatalf("request after a broken stream: %d %s", r.Status, r.Body)
		}
	}
}

// waitBreaker waits until route's breaker reports want (its open period has passed), for
// at most 10 s, so that a loaded machine only makes the test slower.
func waitBreaker[R any](t *testing.T, state func(R) string, route R, want string) {
	t.Helper()
	if !poll.Wait(10*time.Second, func() bool { return state(route) == want }) {
		t.Fatalf("breaker %s, want %s after its open period", state(route), want)
	}
}
