package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/loadstat"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/dataplane/scrape"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/snapshot"
)

// A tenant's second request, served at its prefix's home, sends a one-token copy to the
// key's other home, two vLLM-like replicas whose cache sizes the node has read: the other
// replica prefills the prompt while nobody waits for it, the copy is not recorded, and
// the node counts it.
func TestWarmHomesFillTheOtherReplica(t *testing.T) {
	sims := make([]*simulator.Server, 2)
	routes := make([]snapshot.Route, 2)
	for i := range sims {
		sims[i] = simulator.New(simulator.Config{Name: fmt.Sprintf("vllm-%d", i), Engine: simulator.EngineConfig{Slots: 4}})
		if err := sims[i].Start(context.Background(), "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sims[i].Close() })
		routes[i] = chatRoute(fmt.Sprintf("r%d", i), "sim", sims[i].BaseURL(), "SE", 0, 1)
		routes[i].Server = "vllm"
	}
	g := startSimGateway(t, routes, func(c *Config) {
		c.Selector = &routing.Selector{Loads: loadstat.NewRegistry(), WarmHomes: true}
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	loads := g.Srv.cfg.Selector.Loads
	go scrape.New(scrape.Config{Loads: loads, Interval: 20 * time.Millisecond}).Run(ctx)

	// Other tenants' requests until both replicas have been used and read (a replica is
	// read while in use), each sent once: one-off prompts warm nothing.
	sent := 0
	for seed := 0; sims[0].Stats().Requests == 0 || sims[1].Stats().Requests == 0; seed++ {
		if seed == 50 {
			t.Fatal("fifty tenants all went to one replica")
		}
		if r := g.post(t, g.Keys.SE, promptOf(fmt.Sprintf("other%d", seed), "q", "")); r.Status != 200 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		sent++
	}
	if !waitFor(5*time.Second, func() bool {
		return loads.For(g.route(t, "r0")).CacheTokens() > 0 && loads.For(g.route(t, "r1")).CacheTokens() > 0
	}) {
		t.Fatal("the node never read the replicas' cache sizes")
	}
	before := [2]int64{sims[0].Stats().Requests, sims[1].Stats().Requests}
	var queried [2]int64
	for i, sim := range sims {
		queried[i], _ = sim.PrefixCache()
	}
	for _, q := range []string{"first", "second"} {
		if r := g.post(t, g.Keys.SE, promptOf("tenant", q, "")); r.Status != 200 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	}
	if !waitFor(5*time.Second, func() bool { return warmups(t, g, "ok") == 1 }) {
		t.Fatalf("copies answered: %v, want 1", warmups(t, g, "ok"))
	}
	home, other := 0, 1
	if sims[1].Stats().Requests-before[1] == 2 {
		home, other = 1, 0
	}
	if got := [2]int64{sims[home].Stats().Requests - before[home], sims[other].Stats().Requests - before[other]}; got != [2]int64{2, 1} {
		t.Fatalf("home and other replica got %v requests, want the tenant's two and the copy", got)
	}
	if q, _ := sims[other].PrefixCache(); q-queried[other] < 64 {
		t.Fatalf("the other replica prefilled %d prompt tokens, want the tenant's prompt", q-queried[other])
	}
	// Nothing of the copy is recorded: the tenant's two requests and the others' only. The
	// copy is over (counted above once answered), so a record of it would be here now.
	awaitRecords(t, g.Meter, sent+2)
	if n := g.Meter.Count(); n != sent+2 {
		t.Fatalf("%d records, want %d", n, sent+2)
	}
	if f := warmups(t, g, "failed"); f != 0 {
		t.Fatalf("%v copies failed", f)
	}
}

// warmups is the node's count of warm-up copies with outcome.
func warmups(t *testing.T, g *simGateway, outcome string) float64 {
	t.Helper()
	fams, err := g.Srv.cfg.Telemetry.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, f := range fams {
		if f.GetName() != "gateway_prefix_warmups_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}
