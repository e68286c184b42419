package benchrouting

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The balancer sends requests to the nodes in turn, path and body as sent.
func TestBalancerRoundRobin(t *testing.T) {
	var urls []string
	for i := range 3 {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%d %s %s", i, r.URL.Path, b)
		}))
		defer s.Close()
		urls = append(urls, s.URL+"/v1")
	}
	lb, err := startBalancer("127.0.0.1:0", urls, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.close()
	for i := range 7 {
		resp, err := http.Post(lb.url+"/chat/completions", "application/json", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("%d /v1/chat/completions x", i%3); string(b) != want {
			t.Fatalf("request %d: %q, want %q", i, b, want)
		}
	}
	if got := fmt.Sprint(lb.perNode()); got != "[3 2 2]" {
		t.Fatalf("per node %s", got)
	}
}

// A client-side policy's request naming a replica passes the balancer and the next
// pass-through node to that replica; one naming none goes to the node's first.
func TestPassThroughReachesTheNamedReplica(t *testing.T) {
	var replicas []string
	for k := range 4 {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "replica %d %s", k, r.URL.Path)
		}))
		defer s.Close()
		replicas = append(replicas, s.URL+"/v1")
	}
	pt, err := startPassThrough(2, replicas)
	if err != nil {
		t.Fatal(err)
	}
	defer pt.close()
	lb, err := startBalancer("127.0.0.1:0", pt.nodeURLs(), pt)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.close()
	for i, tc := range []struct{ named, want string }{
		{"2", "replica 2 /v1/chat/completions"},
		{"3", "replica 3 /v1/chat/completions"},
		{"0", "replica 0 /v1/chat/completions"},
		{"", "replica 0 /v1/chat/completions"},
		{"9", "replica 0 /v1/chat/completions"},
	} {
		req, _ := http.NewRequest(http.MethodPost, lb.url+"/chat/completions", strings.NewReader("x"))
		if tc.named != "" {
			req.Header.Set(replicaHeader, tc.named)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != tc.want {
			t.Errorf("request %d naming %q: %q, want %q", i, tc.named, b, tc.want)
		}
	}
	if got := fmt.Sprint(lb.perNode()); got != "[3 2]" {
		t.Errorf("per node %s", got)
	}
}

func TestFleetTable(t *testing.T) {
	rs := []Result{
		{Workload: "a", Policy: defaultName, Nodes: 1, TTFTp90: 31, TTFTp99: 750, PrefixHitRate: 0.87},
		{Workload: "a", Policy: pinName, Nodes: 1, TTFTp90: 31, TTFTp99: 750, PrefixHitRate: 0.89},
		{Workload: "a", Policy: defaultName, Nodes: 3, TTFTp90: 62, TTFTp99: 1500, PrefixHitRate: 0.6, TenantReplicas: 3.5},
		{Workload: "a", Policy: pinName, Nodes: 3, TTFTp90: 31, TTFTp99: 750, PrefixHitRate: 0.89},
		{Workload: "c", Policy: fewestProxiedName, Nodes: 3, TTFTp90: 31.4, TTFTp99: 751},
		{Workload: "e", Policy: defaultName, Nodes: 3, QuietTTFTp90: 300, Throttled: 40, Requests: 200},
		{Workload: "e0", Policy: defaultName, Nodes: 3, QuietTTFTp90: 140},
		{Workload: "f", Policy: defaultName, Nodes: 1, AdmittedPerSec: 10.2},
	}
	md := fleetTable(rs, 1, 3)
	for _, want := range []string{
		"| measure | 1 node | 3 nodes |",
		"| (a) shared prefixes: default TTFT p90 / p99 | 31 / 750 ms | 62 / 1500 ms |",
		"| (a) default ÷ pinning, p90 / p99 | 1.0× / 1.0× | 2.0× / 2.0× |",
		"| (a) prefix hits, default / pinning | 87 % / 89 % | 60 % / 89 % |",
		"| (a) replicas per tenant, default / pinning | 0.0 / 0.0 | 3.5 / 0.0 |",
		"| (c) hot tenant: default TTFT p90 / p99 | – | – |",
		"| (c) fewest in flight TTFT p90 / p99, straight to the replicas | – | – |",
		"| (c) fewest in flight TTFT p90 / p99, through the same hops | – | 31 / 751 ms |",
		"| (d) quiet tenant's TTFT p90 under a 10× burst / without it | – | – |",
		"| (e) quiet accounts' TTFT p90 under a 15× burst / without it | – | 300 / 140 ms |",
		"| (e) 429s, of all requests | – | 40 of 200 |",
		"| (f) admitted per second, limit 10/s, sending 45/s | 10.2 | – |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no line %q in\n%s", want, md)
		}
	}
	if got := fmt.Sprint(nodeCounts(rs)); got != "[1 3]" {
		t.Errorf("node counts %s", got)
	}
}

func TestReplicaTable(t *testing.T) {
	if md := replicaTable([]Result{{Workload: "a"}}); md != "" {
		t.Fatalf("results without replica figures: %q", md)
	}
	md := replicaTable([]Result{{Workload: "a", Policy: defaultName, TenantReplicas: 2.25,
		Replicas:  []ReplicaStat{{Requests: 10, HitRate: 0.5, MeanWaiting: 0.25, PeakWaiting: 3}, {Requests: 2}},
		NodeStats: []NodeStat{{Sent: 6, Queued: 1, QueueWaitMS: 40}, {Sent: 6}}}})
	want := "| a | scored (default) | 2.2 | 10 / 2 | 50 % / 0 % | 0.2 (3) / 0.0 (0) | 6, 1 (40), 0; 6, 0 (0), 0 |"
	if !strings.Contains(md, want) {
		t.Fatalf("no line %q in\n%s", want, md)
	}
	one := replicaTable([]Result{{Workload: "a", Policy: defaultName, Replicas: []ReplicaStat{{}}, NodeStats: []NodeStat{{Queued: 2, QueueWaitMS: 5}}}})
	if want := "| all, 2 (5), 0 |"; !strings.Contains(one, want) {
		t.Fatalf("one node: no %q in\n%s", want, one)
	}
}

// The fleet's workloads have the shapes the fleet table names.
func TestFleetWorkloads(t *testing.T) {
	byName := map[string]*Workload{}
	for _, w := range Workloads() {
		byName[w.Name] = w
		if w.Baseline != nil {
			byName[w.Baseline.Name] = w.Baseline
		}
	}
	for _, c := range []struct {
		name  string
		check func(w *Workload) bool
		what  string
	}{
		{"e", func(w *Workload) bool { return w.Rates[3] == 15*w.Rates[0] && w.Rates[0] == w.Rates[1] && w.Burst == 3 }, "one account at 15× the others' rate"},
		{"e0", func(w *Workload) bool { return w.Rates[3] == 0 && w.Tenants == 4 }, "the same without the burst"},
		{"f", func(w *Workload) bool { return w.LimitRPS == 10 && w.Rates[w.Limited] == 45 }, "limited to 10/s, sending 45/s"},
	} {
		w := byName[c.name]
		if w == nil || !c.check(w) {
			t.Errorf("workload %s is not %s: %+v", c.name, c.what, w)
		}
	}
}
