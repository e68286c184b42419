package benchrouting

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Policy is one way of choosing a replica: a gateway routing policy (the model's routing
// field) or a client-side reference that sends straight to the replicas (or, Proxied,
// through the gateway's hops without the gateway).
type Policy struct {
	Name    string
	Routing string // gateway policy; "" for client-side ones
	Client  string // "pin" (tenant i to replica i mod 4) or "fewest" (fewest requests in flight)
	// Proxied sends a client-side policy's requests through as many hops as a gateway
	// policy's: the balancer (with several nodes) and a bare proxy per node (passThrough).
	Proxied bool
}

// Key is the policy's name in --policies and in sample files: the routing policy, or
// the client-side one (with "-proxied" when Proxied).
func (p Policy) Key() string {
	if p.Proxied {
		return p.Client + "-proxied"
	}
	return p.Routing + p.Client
}

// Policies in the report's order.
var Policies = []Policy{
	{Name: "weighted random", Routing: "weighted"},
	{Name: "least load", Routing: "least_load"},
	{Name: "affinity", Routing: "affinity"},
	{Name: defaultName, Routing: "scored"},
	{Name: pinName, Client: "pin"},
	{Name: fewestName, Client: "fewest"},
	{Name: fewestProxiedName, Client: "fewest", Proxied: true},
}

type sample struct {
	at        time.Duration // when it was sent, from the run's start
	warmup    bool          // sent in the first quarter of the run: not counted
	tenant    int
	status    int
	replica   int // the replica that answered (from the stream's ID), -1 unknown
	ttft, e2e time.Duration
}

// Result is one policy's figures on one workload.
type Result struct {
	Workload, Policy  string
	Requests, OK      int
	Errors, Throttled int // other failures; 429s
	TTFTp50, TTFTp90  float64
	TTFTp99, E2Ep50   float64 // ms
	QuietTTFTp90      float64 // ms; the quiet tenants', when the workload has a burst
	QuietThrottled    int     // the quiet tenants' requests refused with 429
	PrefixHitRate     float64
	// Nodes is the number of data-plane nodes behind the balancer (0 in results of
	// runs before there was a choice: one).
	Nodes int `json:",omitempty"`
	// AdmittedPerSec is the limited tenant's answered requests per second, when the
	// workload has a limited tenant.
	AdmittedPerSec float64 `json:",omitempty"`
	// TenantReplicas is the mean number of replicas that answered each tenant over the
	// run (warm-up included): 1 when each tenant stays on one replica.
	TenantReplicas float64       `json:",omitempty"`
	Replicas       []ReplicaStat `json:",omitempty"`
	NodeStats      []NodeStat    `json:",omitempty"`
	// samples are the run's requests in arrival order (--samples writes them).
	samples []sample
}

var client = &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 0}}

// runOne replays arrivals of w against p on a fresh stack of nodes data-plane nodes.
func runOne(ctx context.Context, w *Workload, p Policy, arrivals []arrival, nodes int) (Result, error) {
	st, err := startStack(w, p, nodes)
	if err != nil {
		return Result{}, err
	}
	defer st.close()
	var inflight [4]atomic.Int64
	samples := make([]sample, len(arrivals))
	var wg sync.WaitGroup
	start := time.Now()
	for i, a := range arrivals {
		if d := time.Until(start.Add(a.at)); d > 0 {
			select {
			case <-ctx.Done():
				return Result{}, ctx.Err()
			case <-time.After(d):
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			url, key, named, replica := st.url, "", "", -1
			switch p.Client {
			case "":
				key = st.keys[a.tenant]
			case "pin":
				replica = a.tenant % 4
			case "fewest":
				replica = fewest(&inflight, a.id)
			}
			if replica >= 0 {
				url, named = st.replicaURL(replica)
				inflight[replica].Add(1)
				defer inflight[replica].Add(-1)
			}
			samples[i] = send(ctx, url, key, named, w.body(a, model))
			samples[i].tenant, samples[i].at = a.tenant, a.at
			samples[i].warmup = a.at < warmup(arrivals)
		}()
	}
	wg.Wait()
	r := summarize(w, p, samples)
	r.samples = samples
	r.PrefixHitRate = st.prefixHitRate()
	r.Nodes = max(1, nodes)
	r.Replicas, r.NodeStats = st.replicaStats(), st.nodeStats()
	if w.LimitRPS > 0 && len(arrivals) > 0 {
		if span := arrivals[len(arrivals)-1].at - warmup(arrivals); span > 0 {
			r.AdmittedPerSec = float64(admitted(samples, w.Limited)) / span.Seconds()
		}
	}
	return r, nil
}

// fewest picks the replica with the fewest requests in flight (ties from a rotating start).
func fewest(inflight *[4]atomic.Int64, id int) int {
	best := -1
	for k := range 4 {
		i := (id + k) % 4
		if best < 0 || inflight[i].Load() < inflight[best].Load() {
			best = i
		}
	}
	return best
}

// send posts one streaming chat request (naming the replica chosen for it, when not "",
// to the balancer of pass-through nodes) and times its first event and its end.
func send(ctx context.Context, base, key, replica string, body []byte) sample {
	t0 := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return sample{replica: -1}
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if replica != "" {
		req.Header.Set(replicaHeader, replica)
	}
	resp, err := client.Do(req)
	if err != nil {
		return sample{replica: -1}
	}
	defer resp.Body.Close()
	s := sample{status: resp.StatusCode, replica: -1}
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return s
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadSlice('\n')
		if s.ttft == 0 && bytes.HasPrefix(line, []byte("data:")) {
			s.ttft = time.Since(t0)
			s.replica = replicaOf(line)
		}
		if err != nil {
			break
		}
	}
	s.e2e = time.Since(t0)
	if s.ttft == 0 {
		s.status = 0 // a stream without events is a failure
	}
	return s
}

// replicaOf reads the replica's index from a stream event's ID (the simulator names its
// answers chatcmpl-<name>-<n>, and replicas are named r0 to r3); -1 when absent.
func replicaOf(event []byte) int {
	_, rest, ok := bytes.Cut(event, []byte(`"chatcmpl-r`))
	if !ok || len(rest) < 2 || rest[0] < '0' || rest[0] > '9' || rest[1] != '-' {
		return -1
	}
	return int(rest[0] - '0')
}

// tenantReplicas is the mean number of distinct replicas that answered each tenant.
func tenantReplicas(samples []sample) float64 {
	seen := map[[2]int]bool{}
	tenants := map[int]bool{}
	for _, s := range samples {
		if s.replica >= 0 {
			seen[[2]int{s.tenant, s.replica}] = true
			tenants[s.tenant] = true
		}
	}
	if len(tenants) == 0 {
		return 0
	}
	return float64(len(seen)) / float64(len(tenants))
}

func summarize(w *Workload, p Policy, samples []sample) Result {
	r := Result{Workload: w.Name, Policy: p.Name, TenantReplicas: tenantReplicas(samples)}
	var ttft, e2e, quiet []float64
	for _, s := range samples {
		if s.warmup {
			continue
		}
		r.Requests++
		switch s.status {
		case http.StatusOK:
			r.OK++
			ttft = append(ttft, ms(s.ttft))
			e2e = append(e2e, ms(s.e2e))
			if w.Burst >= 0 && s.tenant != w.Burst {
				quiet = append(quiet, ms(s.ttft))
			}
		case http.StatusTooManyRequests:
			r.Throttled++
			if w.Burst >= 0 && s.tenant != w.Burst {
				r.QuietThrottled++
			}
		default:
			r.Errors++
		}
	}
	r.TTFTp50, r.TTFTp90, r.TTFTp99 = pct(ttft, 50), pct(ttft, 90), pct(ttft, 99)
	r.E2Ep50 = pct(e2e, 50)
	if w.Burst >= 0 {
		r.QuietTTFTp90 = pct(quiet, 90)
	}
	return r
}

// admitted counts tenant's answered requests after the warm-up.
func admitted(samples []sample, tenant int) int {
	n := 0
	for _, s := range samples {
		if !s.warmup && s.tenant == tenant && s.status == http.StatusOK {
			n++
		}
	}
	return n
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// pct is the nearest-rank percentile of v (0 for none).
func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	i := int(float64(len(v))*p/100+0.999999) - 1
	return v[max(0, min(i, len(v)-1))]
}

// warmup is the part of a run whose requests warm the caches and are not counted: its
// first quarter.
func warmup(arrivals []arrival) time.Duration {
	if len(arrivals) == 0 {
		return 0
	}
	return arrivals[len(arrivals)-1].at / 4
}
