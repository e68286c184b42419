package server

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/fairq"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/loadstat"
	"github.com/sekgate/gateway/dataplane/memmeter"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/snapshot"
)

// fourReplicas starts four simulators and returns chat routes to them, all of priority 0.
func fourReplicas(t *testing.T) []snapshot.Route {
	var routes []snapshot.Route
	for i := range 4 {
		sim := startSim(t, fmt.Sprintf("replica%d", i), simulator.Knobs{})
		routes = append(routes, chatRoute(fmt.Sprintf("replica-%d", i), "sim", sim.BaseURL(), "SE", 0, 1))
	}
	return routes
}

func tenantBody(tenant, question int) string {
	return fmt.Sprintf(`{"model":"llama8b","messages":[{"role":"system","content":"You are the assistant of tenant %d."},`+
		`{"role":"user","content":"question %d"}],"max_tokens":4}`, tenant, question)
}

// Requests with one system prompt land on one replica under the default policy, and the
// record says so; the node's in-flight counts return to zero.
func TestScoredKeepsTenantOnOneReplica(t *testing.T) {
	g := startSimGateway(t, fourReplicas(t))
	const n = 12
	for q := range n {
		if r := g.post(t, g.Keys.SE, tenantBody(1, q)); r.Status != 200 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	}
	recs := awaitRecords(t, g.Meter, n)
	first := recs[0].Routing.Attempts[0].Route
	for i, rec := range recs {
		rt := rec.Routing
		if rt.Attempts[0].Route != first {
			t.Fatalf("request %d went to %s, the first to %s", i, rt.Attempts[0].Route, first)
		}
		// The first goes to the key's first home (all idle), the others where the prefix is.
		if rt.Balancer != "scored" || rt.Reason != "affinity" {
			t.Fatalf("request %d: balancer %q reason %q, want scored affinity", i, rt.Balancer, rt.Reason)
		}
	}
	for _, id := range []string{"replica-0", "replica-1", "replica-2", "replica-3"} {
		if f := g.Srv.cfg.Selector.Loads.For(g.route(t, id)).InFlight(); f != 0 {
			t.Fatalf("%s: %d in flight after all answers", id, f)
		}
	}
}

// Different tenants spread over the replicas.
func TestScoredSpreadsTenants(t *testing.T) {
	g := startSimGateway(t, fourReplicas(t))
	for tenant := range 16 {
		if r := g.post(t, g.Keys.SE, tenantBody(tenant, 0)); r.Status != 200 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	}
	used := map[string]bool{}
	for _, rec := range awaitRecords(t, g.Meter, 16) {
		used[rec.Routing.Attempts[0].Route] = true
	}
	if len(used) < 3 {
		t.Fatalf("16 tenants used only %v", used)
	}
}

// startNode starts one more data-plane node on snap (a second node of a fleet).
func startNode(t *testing.T, snap *snapshot.Snapshot) (url string, m *memmeter.Meter) {
	x, err := index.Build(snap)
	if err != nil {
		t.Fatal(err)
	}
	store := &index.Store{}
	store.Swap(x)
	m = memmeter.New(0)
	m.SeedBalances(snap.Balances, snap.BalanceSeq)
	srv, err := New(Config{Store: store, Meter: m, Settings: Settings{HeaderTimeout: 5 * time.Second},
		Pool: proxy.NewPool(proxy.Config{ConnectTimeout: time.Second, FirstByteTimeout: 2 * time.Second})})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { _ = srv.Shutdown() })
	t.Cleanup(testClient.CloseIdleConnections)
	return "http://" + ln.Addr().String(), m
}

// A fleet: two nodes that share nothing but the snapshot send each tenant's requests to the
// same replica, under every load-aware policy.
func TestFleetSendsTenantToOneReplica(t *testing.T) {
	for _, policy := range []string{"", snapshot.RoutingAffinity} {
		t.Run("policy "+policy, func(t *testing.T) {
			a := startSimGateway(t, fourReplicas(t))
			for i := range a.Snap.Models {
				a.Snap.Models[i].Routing = policy
			}
			x, err := index.Build(a.Snap)
			if err != nil {
				t.Fatal(err)
			}
			a.Store.Swap(x)
			bURL, _ := startNode(t, a.Snap)
			b := &simGateway{URL: bURL}
			// Each tenant's requests alternate between the nodes; the simulator that answered
			// is named in the answer's id.
			const tenants, each = 6, 4
			replica := map[int]string{}
			for q := range each {
				for tenant := range tenants {
					node := a
					if (q+tenant)%2 == 1 {
						node = b
					}
					r := node.post(t, a.Keys.SE, tenantBody(tenant, q))
					if r.Status != 200 {
						t.Fatalf("status %d: %s", r.Status, r.Body)
					}
					got := replicaOf(t, r.Body)
					if prev, ok := replica[tenant]; ok && prev != got {
						t.Fatalf("tenant %d: sent to %s and to %s", tenant, prev, got)
					}
					replica[tenant] = got
				}
			}
			used := map[string]bool{}
			for _, v := range replica {
				used[v] = true
			}
			if len(used) < 2 {
				t.Fatalf("all tenants on one replica: %v", replica)
			}
		})
	}
}

// replicaOf names the simulator that answered (its name is in the answer's id).
func replicaOf(t *testing.T, body string) string {
	i := strings.Index(body, `"id":"chatcmpl-`)
	if i < 0 {
		t.Fatalf("no id in %s", body)
	}
	rest := body[i+len(`"id":"chatcmpl-`):]
	return rest[:strings.IndexByte(rest, '-')]
}

// The record names the server queue the node saw at dispatch (a server's fresh report).
func TestRecordShowsServerQueue(t *testing.T) {
	sim := startSim(t, "only", simulator.Knobs{})
	g := startSimGateway(t, []snapshot.Route{chatRoute("only", "sim", sim.BaseURL(), "SE", 0, 1)})
	g.Srv.cfg.Selector.Loads.For(g.route(t, "only")).SetServer(loadstat.Report{Waiting: 5, Running: 4, KV: 0.5}, time.Now().UnixNano(), 0)
	if r := g.post(t, g.Keys.SE, chatPlainReq); r.Status != 200 {
		t.Fatalf("status %d", r.Status)
	}
	rt := g.record(t, 1).Routing
	if rt.ServerQueue != 5 || rt.Reason != "only" || rt.Balancer != "scored" {
		t.Fatalf("routing %+v", rt)
	}
}

// While every route is saturated, requests wait in the fair queue; past its bound they get
// 429 with Retry-After; once a route has room the held request goes and its record says
// it queued.
func TestFairQueueHoldsWhileSaturated(t *testing.T) {
	sim := startSim(t, "only", simulator.Knobs{})
	fq := fairq.New(fairq.Config{MaxWait: time.Minute, AccountDepth: 1, Poll: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go fq.Run(ctx)
	g := startSimGateway(t, []snapshot.Route{chatRoute("only", "sim", sim.BaseURL(), "SE", 0, 1)},
		func(c *Config) { c.FairQueue = fq })
	loads := g.Srv.cfg.Selector.Loads
	loads.FreshFor = time.Hour
	ld := loads.For(g.route(t, "only"))
	ld.SetServer(loadstat.Report{Waiting: 5, Running: 4}, time.Now().UnixNano(), 0)

	held := make(chan result, 1)
	go func() { held <- g.post(t, g.Keys.SE, chatPlainReq) }()
	if !waitFor(10*time.Second, fq.Busy) {
		t.Fatal("request not held")
	}
	// The account's queue (depth 1) is full: the next is refused at once.
	r := g.post(t, g.Keys.SE, chatPlainReq)
	if r.Status != 429 || r.Header.Get("Retry-After") == "" || !strings.Contains(r.Body, "at capacity") {
		t.Fatalf("refusal: %d %v %s", r.Status, r.Header, r.Body)
	}
	ld.SetServer(loadstat.Report{Waiting: 0, Running: 3}, time.Now().UnixNano(), 0)
	if r := <-held; r.Status != 200 {
		t.Fatalf("held request: %d %s", r.Status, r.Body)
	}
	rec := g.record(t, 1)
	if rec.Status != 200 || g.Meter.Count() != 1 {
		t.Fatalf("records: %d, first %+v", g.Meter.Count(), rec)
	}
}
