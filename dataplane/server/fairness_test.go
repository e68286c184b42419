package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/fairq"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/scrape"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/snapshot"
)

// arrivals logs the tag of each chat request in the order a replica received it.
type arrivals struct {
	mu    sync.Mutex
	order []string
}

func (a *arrivals) add(tag string) {
	a.mu.Lock()
	a.order = append(a.order, tag)
	a.mu.Unlock()
}

func (a *arrivals) list() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.order...)
}

// count is how many tags with prefix have arrived.
func (a *arrivals) count(prefix string) int {
	n := 0
	for _, tag := range a.list() {
		if strings.HasPrefix(tag, prefix) {
			n++
		}
	}
	return n
}

var tagPattern = regexp.MustCompile(`(warm|burst|quiet)-[0-9]+`)

// startEngineReplica serves a simulator with the vLLM-like engine (2 slots, about 300 ms
// a request) behind a handler that logs each chat request's tag as it arrives, and
// returns its base URL.
func startEngineReplica(t *testing.T, log *arrivals) string {
	t.Helper()
	sim := simulator.New(simulator.Config{Name: "replica",
		Engine: simulator.EngineConfig{Slots: 2, Overhead: 10 * time.Millisecond, PerOutputToken: 10 * time.Millisecond},
		Knobs:  simulator.Knobs{OutputTokens: 30}})
	h := sim.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" {
			b, _ := io.ReadAll(r.Body)
			if tag := tagPattern.Find(b); tag != nil {
				log.add(string(tag))
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// streamed is one streamed answer as the client saw it.
type streamed struct {
	tag        string
	status     int
	retryAfter string
	body       string
	err        error
}

// streamChat sends one streaming chat request tagged tag and reads the answer to its end.
func streamChat(base, key, tag string) streamed {
	body := fmt.Sprintf(`{"model":"llama8b","stream":true,"max_tokens":30,"messages":[{"role":"user","content":"%s: tell me something"}]}`, tag)
	req, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return streamed{tag: tag, err: err}
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := testClient.Do(req)
	if err != nil {
		return streamed{tag: tag, err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return streamed{tag: tag, status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(b), err: err}
}

// A quiet account keeps its turn while another account's burst waits in the node's fair
// queue: each of its requests reaches the replica ahead of all but a couple of the
// burst's requests that were waiting when it arrived, and every one of them is answered.
// The test asserts the order in which the replica receives requests, not times.
func TestQuietAccountKeepsItsTurnUnderBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("a burst of seconds against a real engine replica; skipped with -short")
	}
	var log arrivals
	fq := fairq.New(fairq.Config{}) // the node's defaults: 5 s at most in the queue
	g := startSimGateway(t, []snapshot.Route{chatRoute("replica", "sim", startEngineReplica(t, &log), "SE", 0, 1)},
		func(c *Config) {
			c.FairQueue = fq
			c.Pool = proxy.NewPool(proxy.Config{ConnectTimeout: 5 * time.Second, FirstByteTimeout: 30 * time.Second})
		})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go fq.Run(ctx)
	loads := g.Srv.cfg.Selector.Loads
	go scrape.New(scrape.Config{Loads: loads, Interval: 50 * time.Millisecond}).Run(ctx)
	burstKey, quietKey := g.Keys.SE, g.Keys.EU

	// Warm up: the node learns the replica's capacity once it has seen requests waiting
	// there; until then nothing counts as full and a burst goes straight to the replica's
	// own first-come queue.
	route := g.route(t, "replica")
	known := func() bool {
		return loads.For(route).View(time.Now().UnixNano(), loads.FreshFor).SlotsKnown()
	}
	for round := 0; !known(); round++ {
		if round == 10 {
			t.Fatal("the node never learned the replica's capacity")
		}
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if o := streamChat(g.URL, burstKey, fmt.Sprintf("warm-%d", round*4+i)); o.err != nil || o.status != 200 {
					t.Errorf("warm-up %s: %d %v %s", o.tag, o.status, o.err, o.body)
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}

	// The burst: once every request of it is at the replica or in the fair queue, most
	// wait in the queue.
	const burst = 40
	burstDone := make(chan streamed, burst)
	for i := range burst {
		go func() { burstDone <- streamChat(g.URL, burstKey, fmt.Sprintf("burst-%d", i)) }()
	}
	if !waitFor(20*time.Second, func() bool {
		held := fq.Len()
		return held >= burst/2 && log.count("burst-")+held == burst
	}) {
		t.Fatalf("burst not held: %d at the replica, %d in the fair queue", log.count("burst-"), fq.Len())
	}

	// The quiet account's requests, one after another. Each is taken as arrived once the
	// fair queue's entries (waiting plus let go) grow by one, or once it is answered (it
	// did not queue, or a refusal hid its entry); the burst's requests not at the replica
	// then are the ones it found waiting.
	const quiet = 3
	entries := func() int64 { return int64(fq.Len()) + fq.Granted.Load() }
	waiting := make([]map[string]bool, quiet)
	for j := range quiet {
		before := entries()
		done := make(chan streamed, 1)
		go func() { done <- streamChat(g.URL, quietKey, fmt.Sprintf("quiet-%d", j)) }()
		var o streamed
		answered := false
		waitFor(20*time.Second, func() bool {
			select {
			case o = <-done:
				answered = true
				return true
			default:
				return entries() > before
			}
		})
		arrived := map[string]bool{}
		for _, tag := range log.list() {
			arrived[tag] = true
		}
		waiting[j] = map[string]bool{}
		for i := range burst {
			if tag := fmt.Sprintf("burst-%d", i); !arrived[tag] {
				waiting[j][tag] = true
			}
		}
		if !answered {
			o = <-done
		}
		if o.err != nil || o.status != 200 || !strings.Contains(o.body, "data: [DONE]") {
			t.Fatalf("quiet request %s: %d %v %s", o.tag, o.status, o.err, o.body)
		}
	}
	if len(waiting[0]) < burst/2 {
		t.Fatalf("only %d of the burst waited when the first quiet request arrived", len(waiting[0]))
	}

	// Every request of the burst is answered or refused with 429 and Retry-After (it waited
	// past the queue's bound).
	answered, refused := 0, 0
	deadline := time.After(30 * time.Second)
	for range burst {
		select {
		case o := <-burstDone:
			switch {
			case o.err == nil && o.status == 200 && strings.Contains(o.body, "data: [DONE]"):
				answered++
			case o.err == nil && o.status == 429 && o.retryAfter != "":
				refused++
			default:
				t.Errorf("burst request %s: %d %v Retry-After %q %s", o.tag, o.status, o.err, o.retryAfter, o.body)
			}
		case <-deadline:
			t.Fatalf("burst requests unanswered after 30 s (%d answered, %d refused)", answered, refused)
		}
	}

	// The order at the replica: each quiet request went ahead of all but a couple of the
	// burst's requests that waited when it arrived (one whose turn it was, one let go and
	// on its way).
	order := log.list()
	pos := map[string]int{}
	for i, tag := range order {
		pos[tag] = i
	}
	aheads := make([]int, quiet)
	for j := range quiet {
		tag := fmt.Sprintf("quiet-%d", j)
		q, ok := pos[tag]
		if !ok {
			t.Fatalf("%s never reached the replica", tag)
		}
		var ahead []string
		for w := range waiting[j] {
			if p, ok := pos[w]; ok && p < q {
				ahead = append(ahead, w)
			}
		}
		aheads[j] = len(ahead)
		if len(ahead) > 2 {
			t.Errorf("%s reached the replica after %d of the %d burst requests waiting when it arrived: %v",
				tag, len(ahead), len(waiting[j]), order)
		}
	}
	t.Logf("burst: %d answered, %d refused with 429; quiet requests: %d burst requests waiting on arrival, %d of them went first",
		answered, refused, len(waiting[0]), aheads[0])
	for j := 1; j < quiet; j++ {
		t.Logf("%d waiting, %d went first", len(waiting[j]), aheads[j])
	}
}
