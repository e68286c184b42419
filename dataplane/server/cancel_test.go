package server

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/outcome"
	"github.com/sekgate/gateway/internal/poll"
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
				left = time.Now()
				cancel()
			}
			<-done
			if left.IsZero() {
				t.Fatal("client never left")
			}
			// The upstream's answer is 5 s away: a cancellation seen within 4 s, however
			// busy the machine, came from the client leaving.
			if !waitFor(4*time.Second, func() bool { return up.Stats().Cancelled == 1 }) {
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
// within a bounded number of requests while the other replica serves everything. The
// test counts requests, not time, so that a busy machine only makes it slower.
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
	var stop atomic.Bool
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(outs) }
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
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
	const loadBefore, loadAfter = 50, 150
	poll.Until(t, time.Minute, "requests served by both replicas", func() bool { return count() >= loadBefore })
	killed := time.Now()
	_ = a.Close()
	atKill := count()
	// loadAfter requests after the ones in flight at the kill (at most 8, see below).
	poll.Until(t, time.Minute, "requests after the kill", func() bool { return count() >= atKill+8+loadAfter })
	stop.Store(true)
	wg.Wait()
	sort.Slice(outs, func(i, j int) bool { return outs[i].at.Before(outs[j].at) })

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
	// Back to no errors: the last loadAfter requests all succeeded.
	for _, o := range outs[len(outs)-loadAfter:] {
		if !o.ok {
			t.Errorf("a request failed %v after the kill, among the last %d", o.at.Sub(killed), loadAfter)
			break
		}
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
