package server

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/outcome"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// TestClientCancelCancelsUpstream: a client closing its connection cancels the upstream
// request at once — while the gateway waits for a non-streaming answer, and while a stream
// is idle between events — long before the upstream would next be written to.
func TestClientCancelCancelsUpstream(t *testing.T) {
	cases := []struct {
		name  string
		knobs simulator.Knobs
		body  string
	}{
		// The answer would come after 5 s.
		{"waiting for the answer", simulator.Knobs{LatencyMS: 5000}, chatPlainReq},
		// Headers come at once, the first token after 5 s.
		{"waiting for the first event", simulator.Knobs{TTFTMS: 5000}, chatStreamReq},
		// One token every 5 s: the client leaves after the first event.
		{"idle stream", simulator.Knobs{TokensPerSecond: 0.2}, chatStreamReq},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up := startSim(t, "up", c.knobs)
			g := startSimGateway(t, []snapshot.Route{chatRoute("a", "p", up.BaseURL(), "SE", 0, 1)})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", g.URL+"/v1/chat/completions", strings.NewReader(c.body))
			req.Header.Set("Authorization", "Bearer "+g.Keys.SE)
			var left time.Time
			done := make(chan struct{})
			go func() {
				defer close(done)
				resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
				if err != nil {
					return
				}
				defer resp.Body.Close()
				br := bufio.NewReader(resp.Body)
				if _, err := br.ReadString('\n'); err != nil { // the first event's line
					t.Errorf("read first event: %v", err)
				}
				left = time.Now()
				cancel()
			}()
			if !strings.Contains(c.name, "idle") {
				if !waitFor(3*time.Second, func() bool { return up.Stats().InFlight == 1 }) {
					t.Fatal("request never reached the upstream")
				}
				time.Sleep(100 * time.Millisecond)
				left = time.Now()
				cancel()
			}
			<-done
			if left.IsZero() {
				t.Fatal("client never left")
			}
			if !waitFor(1500*time.Millisecond, func() bool { return up.Stats().Cancelled == 1 }) {
				t.Fatalf("upstream not cancelled: %+v", up.Stats())
			}
			took := time.Since(left)
			t.Logf("upstream saw the cancellation %v after the client left", took.Round(time.Millisecond))
			rec := g.record(t, 1)
			if rec.Result != usage.ResultCancelled {
				t.Errorf("record %+v", rec)
			}
			if c.body == chatPlainReq && rec.Status != outcome.StatusClientClosed {
				t.Errorf("status %d", rec.Status)
			}
			if up.Stats().Completed != 0 {
				t.Error("upstream completed the answer")
			}
		})
	}
}

// TestKillReplicaMidLoad: two replicas share the traffic; one dies mid-load. Requests in
// flight on it fail over (before their first byte) or end incomplete (streams already
// started); its breaker opens within a few requests, and the error rate is back to zero
// within a bounded time while the other replica serves everything.
func TestKillReplicaMidLoad(t *testing.T) {
	k := simulator.Knobs{OutputTokens: 6, TokensPerSecond: 300}
	a, b := startSim(t, "a", k), startSim(t, "b", k)
	g := startSimGateway(t, []snapshot.Route{
		chatRoute("ra", "prov-a", a.BaseURL(), "SE", 0, 1), chatRoute("rb", "prov-b", b.BaseURL(), "SE", 0, 1)},
		func(c *Config) { c.Health = nil }) // defaults: open after 5 failures, probe after 10 s
	type outcome struct {
		at time.Time
		ok bool
	}
	var (
		mu   sync.Mutex
		outs []outcome
		wg   sync.WaitGroup
	)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	start := time.Now()
	stop := start.Add(2 * time.Second)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(stop); i++ {
				body := chatPlainReq
				if (w+i)%2 == 0 {
					body = chatStreamReq
				}
				req, _ := http.NewRequest("POST", g.URL+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+g.Keys.SE)
				ok := false
				if resp, err := client.Do(req); err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					ok = resp.StatusCode == 200 && (body == chatPlainReq || strings.Contains(string(b), "[DONE]"))
				}
				mu.Lock()
				outs = append(outs, outcome{time.Now(), ok})
				mu.Unlock()
			}
		}()
	}
	time.Sleep(700 * time.Millisecond)
	killed := time.Now()
	_ = a.Close()
	wg.Wait()

	var before, after, errs int
	var lastErr time.Time
	for _, o := range outs {
		if o.at.Before(killed) {
			before++
		} else {
			after++
		}
		if !o.ok {
			errs++
			lastErr = o.at
		}
	}
	// Attempts the dead replica cost: failed attempts on it (each failed over or, for a
	// started stream, ended it).
	deadAttempts := 0
	waitFor(time.Second, func() bool { return g.Meter.Count() >= len(outs) })
	for _, rec := range g.Meter.Records() {
		for _, at := range rec.Routing.Attempts {
			if at.Route == "ra" && at.Error != "" {
				deadAttempts++
			}
		}
	}
	last := "none"
	if errs > 0 {
		last = lastErr.Sub(killed).Round(time.Millisecond).String() + " after the kill"
	}
	t.Logf("%d requests (%d before the kill, %d after), %d failed (last: %s), %d failed attempts on the dead replica; its breaker: %s",
		len(outs), before, after, errs, last, deadAttempts, g.Health.State(g.route(t, "ra")))
	if deadAttempts > 12 {
		t.Errorf("the dead replica cost %d attempts: its breaker should have opened after 5", deadAttempts)
	}
	if len(outs) < 150 {
		t.Errorf("only %d requests in 2 s", len(outs))
	}
	const bound = 500 * time.Millisecond
	if errs > 0 && lastErr.Sub(killed) > bound {
		t.Errorf("failures continued %v after the kill (bound %v)", lastErr.Sub(killed), bound)
	}
	if errs > 8 {
		t.Errorf("%d failures: more than the streams in flight on the dead replica", errs)
	}
	if st := g.Health.State(g.route(t, "ra")); st != "open" {
		t.Errorf("dead replica's breaker %s", st)
	}
	if n := b.Stats().Completed; n < int64(after) {
		t.Errorf("surviving replica completed %d of %d requests after the kill", n, after)
	}
}
