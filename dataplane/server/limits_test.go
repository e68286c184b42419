package server

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/dataplane/limits"
	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/snapshot"
)

// withLimits installs a copy of g's snapshot with account/key/default limits changed.
func (g *simGateway) withLimits(t testing.TB, acct, key *snapshot.Limits, defaults snapshot.Limits) {
	t.Helper()
	s := *g.Snap
	s.Version++
	s.Accounts = append([]snapshot.Account(nil), g.Snap.Accounts...)
	s.Keys = append([]snapshot.Key(nil), g.Snap.Keys...)
	for i := range s.Accounts {
		if s.Accounts[i].ID == fixture.AcctSE {
			s.Accounts[i].Limits = acct
		}
	}
	for i := range s.Keys {
		if s.Keys[i].ID == g.Keys.IDs["se"] {
			s.Keys[i].Limits = key
		}
	}
	s.DefaultLimits = defaults
	x, err := index.Build(&s)
	if err != nil {
		t.Fatal(err)
	}
	g.Store.Swap(x)
	g.Snap = &s
}

func TestRateAndConcurrencyLimits(t *testing.T) {
	up := startSim(t, "up", simulator.Knobs{})
	slow := startSim(t, "slow", simulator.Knobs{LatencyMS: 400})
	cases := []struct {
		name      string
		acct, key *snapshot.Limits
		defaults  snapshot.Limits
		slow      bool
		code      string
	}{
		{name: "account rate", acct: &snapshot.Limits{RequestsPerSecond: 0.5, Burst: 2}, code: "rate_limit_exceeded"},
		{name: "key rate", key: &snapshot.Limits{RequestsPerSecond: 0.5, Burst: 2}, code: "rate_limit_exceeded"},
		{name: "default rate", defaults: snapshot.Limits{RequestsPerSecond: 0.5, Burst: 2}, code: "rate_limit_exceeded"},
		{name: "account concurrency", acct: &snapshot.Limits{MaxConcurrent: 2}, slow: true, code: "concurrency_limit_exceeded"},
		{name: "default concurrency", defaults: snapshot.Limits{MaxConcurrent: 2}, slow: true, code: "concurrency_limit_exceeded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := up.BaseURL()
			if c.slow {
				u = slow.BaseURL()
			}
			g := startSimGateway(t, []snapshot.Route{chatRoute("a", "p", u, "SE", 0, 1)})
			g.withLimits(t, c.acct, c.key, c.defaults)
			// Three at once: two fit (burst 2, or two slots), the third is refused.
			var wg sync.WaitGroup
			res := make([]result, 3)
			for i := range res {
				wg.Add(1)
				go func() { defer wg.Done(); res[i] = g.post(t, g.Keys.SE, chatPlainReq) }()
				if c.slow && i < 2 { // the first two hold their slots before the third comes
					poll.Until(t, 10*time.Second, "a request at the upstream", func() bool { return slow.Stats().InFlight == int64(i+1) })
				}
			}
			wg.Wait()
			ok, refused := 0, 0
			for _, r := range res {
				switch r.Status {
				case 200:
					ok++
				case 429:
					refused++
					checkEnvelope(t, r, 429, c.code)
					ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
					if err != nil || ra < 1 || ra > 2 {
						t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
					}
					if r.Header.Get("X-Service-Provider") != "" {
						t.Error("provider header on a request that never reached a provider")
					}
				default:
					t.Fatalf("status %d: %s", r.Status, r.Body)
				}
			}
			if ok != 2 || refused != 1 {
				t.Fatalf("%d admitted, %d refused", ok, refused)
			}
			// Limit refusals happen before routing: not recorded.
			if n := g.Meter.Count(); n != 2 {
				t.Errorf("%d records", n)
			}
			if c.slow { // the slots are free again once the requests ended
				if r := g.post(t, g.Keys.SE, chatPlainReq); r.Status != 200 {
					t.Errorf("after the slow requests: %d", r.Status)
				}
			}
			// Another account is not affected by this account's or key's limits.
			if c.acct != nil || c.key != nil {
				if r := g.post(t, g.Keys.EU, chatPlainReq); r.Status != 200 {
					t.Errorf("other account: %d", r.Status)
				}
			}
		})
	}
}

// TestStreamHoldsConcurrencySlot: a stream keeps its slot until it ends.
func TestStreamHoldsConcurrencySlot(t *testing.T) {
	up := startSim(t, "up", simulator.Knobs{TokensPerSecond: 10, OutputTokens: 4}) // ~300 ms stream
	g := startSimGateway(t, []snapshot.Route{chatRoute("a", "p", up.BaseURL(), "SE", 0, 1)})
	g.withLimits(t, &snapshot.Limits{MaxConcurrent: 1}, nil, snapshot.Limits{})
	done := make(chan result)
	go func() { done <- g.post(t, g.Keys.SE, chatStreamReq) }()
	if !waitFor(2*time.Second, func() bool { return up.Stats().InFlight == 1 }) {
		t.Fatal("stream did not start")
	}
	checkEnvelope(t, g.post(t, g.Keys.SE, chatPlainReq), 429, "concurrency_limit_exceeded")
	if r := <-done; r.Status != 200 || !strings.Contains(r.Body, "[DONE]") {
		t.Fatalf("stream %d", r.Status)
	}
	if r := g.post(t, g.Keys.SE, chatPlainReq); r.Status != 200 {
		t.Fatalf("slot not released after the stream: %d", r.Status)
	}
}

// TestLimitsSharedByTwoNodes: two data-plane nodes started with a share of 2 together
// admit about the account's configured rate (each enforces half); the same two nodes
// without the share would admit about twice as much.
func TestLimitsSharedByTwoNodes(t *testing.T) {
	up := startSim(t, "up", simulator.Knobs{})
	const rps, burst = 20, 10
	routes := []snapshot.Route{chatRoute("a", "p", up.BaseURL(), "SE", 0, 1)}
	nodes := make([]*simGateway, 2)
	for i := range nodes {
		nodes[i] = startSimGateway(t, routes, func(c *Config) { c.Limiter = limits.New(limits.Config{ShareNodes: 2}) })
	}
	// Both nodes serve the same snapshot (same keys).
	nodes[1].Keys = nodes[0].Keys
	nodes[1].Snap = nodes[0].Snap
	for _, n := range nodes {
		n.withLimits(t, &snapshot.Limits{RequestsPerSecond: rps, Burst: burst}, nil, snapshot.Limits{})
	}
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	const dur = 1500 * time.Millisecond
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	for w := range 4 { // a round-robin balancer in front of two nodes
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Since(start) < dur; i++ {
				n := nodes[(w+i)%2]
				req, _ := http.NewRequest("POST", n.URL+"/v1/chat/completions", strings.NewReader(chatPlainReq))
				req.Header.Set("Authorization", "Bearer "+nodes[0].Keys.SE)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				switch resp.StatusCode {
				case 200:
					admitted.Add(1)
				case 429:
					refused.Add(1)
				default:
					t.Errorf("status %d", resp.StatusCode)
				}
				// A real sleep: it paces the offered load on a limit that refills in
				// real time, the subject of the test.
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	want := burst + rps*elapsed
	got := float64(admitted.Load())
	t.Logf("2 nodes sharing %d rps (burst %d) over %.2fs: %d admitted, %d refused (configured allows %.0f)",
		rps, burst, elapsed, admitted.Load(), refused.Load(), want)
	if refused.Load() == 0 {
		t.Fatal("offered load never reached the limit")
	}
	if got > want*1.15+2 || got < want*0.8 {
		t.Errorf("admitted %.0f, want about %.0f", got, want)
	}
}
