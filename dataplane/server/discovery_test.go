package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/discovery"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/dnstest"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// startReplicas starts a simulator on each of 127.0.0.1 to 127.0.0.n, all on one port
// (every 127.0.0.0/8 address is loopback on Linux), as the pods of a headless Service.
func startReplicas(t *testing.T, n int) ([]*simulator.Server, int) {
	t.Helper()
	for try := 0; try < 10; try++ {
		port := freePort(t)
		var sims []*simulator.Server
		for i := 1; i <= n; i++ {
			s := simulator.New(simulator.Config{Name: fmt.Sprintf("pod-%d", i)})
			if err := s.Start(context.Background(), fmt.Sprintf("127.0.0.%d:%d", i, port)); err != nil {
				break
			}
			sims = append(sims, s)
		}
		if len(sims) == n {
			t.Cleanup(func() {
				for _, s := range sims {
					_ = s.Close()
				}
			})
			return sims, port
		}
		for _, s := range sims {
			_ = s.Close()
		}
	}
	t.Fatal("no port free on every replica address")
	return nil, 0
}

func freePort(t *testing.T) int {
	t.Helper()
	sim := startSim(t, "probe", simulator.Knobs{})
	addr := strings.TrimSuffix(strings.TrimPrefix(sim.BaseURL(), "http://127.0.0.1:"), "/v1")
	_ = sim.Close()
	var port int
	if _, err := fmt.Sscan(addr, &port); err != nil {
		t.Fatalf("port of %s: %v", sim.BaseURL(), err)
	}
	return port
}

// discoveredGateway serves route behind a resolver that asks dns every 20 ms and keeps
// replicas through empty answers for grace (0: the default).
func discoveredGateway(t *testing.T, dns *dnstest.Server, route snapshot.Route, grace ...time.Duration) *simGateway {
	t.Helper()
	g := startSimGateway(t, []snapshot.Route{route})
	d := discovery.New(discovery.Config{Store: g.Store, Resolver: discovery.NewResolver(dns.Addr), Interval: 20 * time.Millisecond,
		EmptyGrace: slices.Max(append(grace, 0)),
		Build: func(s *snapshot.Snapshot, rep index.Replicas) (*index.Index, error) {
			return index.BuildReplicas(s, nil, rep)
		}})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go d.Run(ctx)
	return g
}

// awaitReplicas waits (at most 2 s, many intervals) until the gateway serves route id
// from exactly addrs.
func awaitReplicas(t *testing.T, g *simGateway, id string, addrs ...string) {
	t.Helper()
	var got []string
	if !waitFor(2*time.Second, func() bool {
		got = got[:0]
		for _, r := range g.Store.Load().Replicas()[id] {
			got = append(got, r.Addr)
		}
		return slices.Equal(got, addrs)
	}) {
		t.Fatalf("replicas %v, want %v", got, addrs)
	}
}

func requests(sims []*simulator.Server) []int64 {
	out := make([]int64, len(sims))
	for i, s := range sims {
		out[i] = s.Stats().Requests
	}
	return out
}

func TestDiscoveredReplicasFollowDNS(t *testing.T) {
	dns := dnstest.Start(t)
	sims, port := startReplicas(t, 3)
	const name = "vllm.llm.gateway.test"
	route := chatRoute("vllm", "sim", fmt.Sprintf("http://%s:%d/v1", name, port), "SE", 0, 1)
	route.Discovery = snapshot.DiscoveryDNS
	g := discoveredGateway(t, dns, route)
	at := func(i int) string { return fmt.Sprintf("127.0.0.%d:%d", i, port) }

	dns.SetA(name, "127.0.0.1", "127.0.0.2")
	awaitReplicas(t, g, "vllm", at(1), at(2))
	seen := map[string]bool{}
	for i := 1; i <= 12; i++ { // tenants of their own: the scored policy spreads them
		if r := g.post(t, g.Keys.SE, tenantBody(i, 0)); r.Status != 200 {
			t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
		}
		seen[g.record(t, i).Routing.Attempts[0].Route] = true
	}
	if n := requests(sims); n[0] == 0 || n[1] == 0 || n[2] != 0 || !seen["vllm@"+at(1)] || !seen["vllm@"+at(2)] {
		t.Fatalf("requests per pod %v, routes %v: want both listed pods used and only them", n, seen)
	}

	// Pod 1 leaves, pod 3 arrives: within an interval nothing goes to pod 1.
	dns.SetA(name, "127.0.0.2", "127.0.0.3")
	awaitReplicas(t, g, "vllm", at(2), at(3))
	before := requests(sims)
	for i := 13; i <= 24; i++ {
		if r := g.post(t, g.Keys.SE, tenantBody(i, 0)); r.Status != 200 {
			t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
		}
	}
	after := requests(sims)
	if after[0] != before[0] || after[1] == before[1] || after[2] == before[2] {
		t.Fatalf("requests per pod %v then %v: want none to the removed pod, some to each listed", before, after)
	}
}

func TestDiscoveredSRVPorts(t *testing.T) {
	dns := dnstest.Start(t)
	a, b := startSim(t, "pod-a", simulator.Knobs{}), startSim(t, "pod-b", simulator.Knobs{})
	const name = "_http._tcp.vllm.llm.gateway.test"
	route := chatRoute("vllm", "sim", "http://"+name+"/v1", "SE", 0, 1)
	route.Discovery = snapshot.DiscoveryDNSSRV
	g := discoveredGateway(t, dns, route)
	addr := func(s *simulator.Server) string {
		return strings.TrimSuffix(strings.TrimPrefix(s.BaseURL(), "http://"), "/v1")
	}
	portOf := func(s *simulator.Server) uint16 {
		var p uint16
		fmt.Sscan(strings.TrimPrefix(addr(s), "127.0.0.1:"), &p)
		return p
	}
	dns.SetA("pod-a.vllm.llm.gateway.test", "127.0.0.1")
	dns.SetA("pod-b.vllm.llm.gateway.test", "127.0.0.1")
	dns.SetSRV(name, dnstest.SRV{Target: "pod-b.vllm.llm.gateway.test", Port: portOf(b)})
	awaitReplicas(t, g, "vllm", addr(b))
	if r := g.post(t, g.Keys.SE, chatPlainReq); r.Status != 200 || b.Stats().Requests != 1 || a.Stats().Requests != 0 {
		t.Fatalf("status %d; requests a %d, b %d: want the SRV record's port", r.Status, a.Stats().Requests, b.Stats().Requests)
	}
	dns.SetSRV(name, dnstest.SRV{Target: "pod-a.vllm.llm.gateway.test", Port: portOf(a)})
	awaitReplicas(t, g, "vllm", addr(a))
	if r := g.post(t, g.Keys.SE, chatPlainReq); r.Status != 200 || a.Stats().Requests != 1 || b.Stats().Requests != 1 {
		t.Fatalf("status %d; requests a %d, b %d: want the new record's port", r.Status, a.Stats().Requests, b.Stats().Requests)
	}
}

func TestRemovedReplicaFinishesItsStream(t *testing.T) {
	dns := dnstest.Start(t)
	sims, port := startReplicas(t, 2)
	// Pod 1 streams slowly: 10 tokens at 20 per second, half a second.
	sims[0].SetKnobs(simulator.Knobs{TokensPerSecond: 20, OutputTokens: 10})
	const name = "vllm.llm.gateway.test"
	route := chatRoute("vllm", "sim", fmt.Sprintf("http://%s:%d/v1", name, port), "SE", 0, 1)
	route.Discovery = snapshot.DiscoveryDNS
	g := discoveredGateway(t, dns, route)
	at := func(i int) string { return fmt.Sprintf("127.0.0.%d:%d", i, port) }

	dns.SetA(name, "127.0.0.1")
	awaitReplicas(t, g, "vllm", at(1))
	done := make(chan result, 1)
	go func() {
		done <- g.post(t, g.Keys.SE, `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"max_tokens":10,"stream":true}`)
	}()
	if !waitFor(2*time.Second, func() bool { return sims[0].Stats().InFlight == 1 }) {
		t.Fatal("the stream never reached pod 1")
	}
	dns.SetA(name, "127.0.0.2") // pod 1 leaves while its stream runs
	awaitReplicas(t, g, "vllm", at(2))
	if r := g.post(t, g.Keys.SE, chatPlainReq); r.Status != 200 || sims[1].Stats().Requests != 1 {
		t.Fatalf("new request: %d, pod 2 requests %d", r.Status, sims[1].Stats().Requests)
	}
	select {
	case r := <-done:
		if r.Status != 200 || !strings.Contains(r.Body, "data: [DONE]") {
			t.Fatalf("the removed pod's stream: %d %q", r.Status, r.Body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the removed pod's stream never finished")
	}
	recs := awaitRecords(t, g.Meter, 2)
	for _, rec := range recs {
		if rec.Stream && (rec.Result != usage.ResultOK || rec.Routing.Attempts[0].Route != "vllm@"+at(1)) {
			t.Fatalf("stream record %+v", rec)
		}
	}
	if sims[0].Stats().Completed != 1 {
		t.Fatalf("pod 1 completed %d streams", sims[0].Stats().Completed)
	}
}

// A route whose records are all gone (past the grace) serves nothing: its model stays
// known, and its requests find no route (503), until records return.
func TestDiscoveredRouteWithoutReplicas(t *testing.T) {
	dns := dnstest.Start(t)
	sims, port := startReplicas(t, 1)
	const name = "vllm.llm.gateway.test"
	route := chatRoute("vllm", "sim", fmt.Sprintf("http://%s:%d/v1", name, port), "SE", 0, 1)
	route.Discovery = snapshot.DiscoveryDNS
	g := discoveredGateway(t, dns, route, time.Nanosecond)
	dns.SetA(name, "127.0.0.1")
	awaitReplicas(t, g, "vllm", fmt.Sprintf("127.0.0.1:%d", port))
	dns.SetA(name) // NXDOMAIN
	awaitReplicas(t, g, "vllm")
	if r := g.post(t, g.Keys.SE, chatPlainReq); r.Status != 503 || sims[0].Stats().Requests != 0 {
		t.Fatalf("without replicas: %d %s, pod requests %d", r.Status, r.Body, sims[0].Stats().Requests)
	}
	dns.SetA(name, "127.0.0.1")
	awaitReplicas(t, g, "vllm", fmt.Sprintf("127.0.0.1:%d", port))
	if r := g.post(t, g.Keys.SE, chatPlainReq); r.Status != 200 {
		t.Fatalf("records back: %d %s", r.Status, r.Body)
	}
}
