package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sekgate/gateway/shared/internalapi"
)

// hostileModes are the misbehaviours the hostile simulator is told to show, one per
// request (the body's "sim" object).
var hostileModes = []struct {
	name string
	sim  map[string]any
}{
	{"int64-max-completion", map[string]any{"usage_completion_tokens": "9223372036854775807"}},
	{"inf-prompt", map[string]any{"usage_prompt_tokens": "1e999"}},
	{"negative-usage", map[string]any{"usage_completion_tokens": "-5"}},
	{"huge-usage", map[string]any{"usage_prompt_tokens": "99999999999"}},
	{"beyond-window", map[string]any{"usage_prompt_tokens": "5000000"}},
	{"garbage-events", map[string]any{"garbage_after_events": 2}},
	{"truncated-event", map[string]any{"truncate_after_events": 3}},
	{"wrong-content-type", map[string]any{"content_type": "text/html"}},
	{"cut-stream", map[string]any{"fail_after_events": 3}},
	{"slow", map[string]any{"tokens_per_second": 40, "output_tokens": 40}},
}

// result is what the client saw of one request.
type result struct {
	ID       string // X-Request-Id ("" when none arrived)
	Node     int
	Account  int
	Hostile  string // hostile mode; "" for the well-behaved model
	Stream   bool
	Status   int
	Complete bool // the whole answer arrived (streams: through [DONE]) with its usage
	Done     bool // a stream ended with [DONE]
	// Usage the client saw (complete answers of the well-behaved model).
	Prompt, Completion int64
	Err                string
	Start, End         time.Time
}

// load drives steady mixed traffic at the stack's data planes until stopped.
type load struct {
	s       *stack
	hostile float64 // share of requests to the hostile model
	slow    bool    // hostile requests are mostly slow streams (to be cut mid-stream)
	mu      sync.Mutex
	results []result
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func startLoad(ctx context.Context, s *stack, workers int, hostileShare float64, slowHostile bool) *load {
	ctx, cancel := context.WithCancel(ctx)
	l := &load{s: s, hostile: hostileShare, slow: slowHostile, cancel: cancel}
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			for n := 0; ctx.Err() == nil; n++ {
				var up []int
				for i, nd := range s.dps {
					if nd.isUp() {
						up = append(up, i)
					}
				}
				if len(up) == 0 {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				r := l.one(ctx, client, rng, up[rng.IntN(len(up))], w, n)
				if r.Err == "stopped" {
					return
				}
				l.mu.Lock()
				l.results = append(l.results, r)
				l.mu.Unlock()
				if r.Status != 200 {
					// A client backs off after a refusal or an error instead of hammering.
					sleep(ctx, 25*time.Millisecond)
				}
			}
		}()
	}
	return l
}

// stop ends the load, waits for requests in flight, and returns every result.
func (l *load) stop() []result {
	l.cancel()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.results
}

func (l *load) one(ctx context.Context, client *http.Client, rng *rand.Rand, nodeIdx, worker, n int) result {
	s := l.s
	acct := rng.IntN(len(s.accounts))
	r := result{Node: nodeIdx, Account: acct, Stream: rng.IntN(2) == 0, Start: time.Now()}
	body := map[string]any{
		"model":      ModelGood,
		"messages":   []map[string]string{{"role": "user", "content": fmt.Sprintf("chaos %d %d", worker, n)}},
		"stream":     r.Stream,
		"max_tokens": 64,
		"sim":        map[string]any{"output_tokens": 8 + rng.IntN(32), "tokens_per_second": 400},
	}
	if r.Stream {
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	if rng.Float64() < l.hostile {
		m := hostileModes[rng.IntN(len(hostileModes))]
		if l.slow && rng.IntN(4) != 0 {
			m = hostileModes[len(hostileModes)-1]
		}
		r.Hostile = m.name
		body["model"] = ModelHostile
		body["sim"] = m.sim
	}
	b, _ := json.Marshal(body)
	// The request outlives the load's context: stopping the load lets requests in flight
	// finish, so every answer the client saw is accounted for.
	req, _ := http.NewRequestWithContext(context.WithoutCancel(ctx), "POST", s.dps[nodeIdx].URL()+"/v1/chat/completions", bytes.NewReader(b))
	if ctx.Err() != nil {
		r.Err = "stopped"
		return r
	}
	req.Header.Set("Authorization", "Bearer "+s.accounts[acct].Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		r.Err, r.End = err.Error(), time.Now()
		return r
	}
	defer resp.Body.Close()
	r.ID, r.Status = resp.Header.Get(internalapi.HeaderRequestID), resp.StatusCode
	if resp.StatusCode != 200 {
		io.Copy(io.Discard, resp.Body)
		r.End = time.Now()
		return r
	}
	var usage struct {
		Usage *struct {
			Prompt     json.Number `json:"prompt_tokens"`
			Completion json.Number `json:"completion_tokens"`
		} `json:"usage"`
	}
	setUsage := func() bool {
		if usage.Usage == nil {
			return false
		}
		p, err1 := usage.Usage.Prompt.Int64()
		c, err2 := usage.Usage.Completion.Int64()
		r.Prompt, r.Completion = p, c
		return err1 == nil && err2 == nil
	}
	if !r.Stream {
		raw, err := io.ReadAll(resp.Body)
		r.End = time.Now()
		if err != nil {
			r.Err = err.Error()
			return r
		}
		if err := json.Unmarshal(raw, &usage); err != nil {
			r.Err = "answer is not JSON"
			return r
		}
		r.Complete = setUsage()
		return r
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sawUsage := false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			r.Done = true
			break
		}
		usage.Usage = nil
		if json.Unmarshal([]byte(data), &usage) == nil && usage.Usage != nil {
			sawUsage = setUsage()
		}
	}
	if err := sc.Err(); err != nil {
		r.Err = err.Error()
	}
	r.Complete = r.Done && sawUsage
	r.End = time.Now()
	return r
}
