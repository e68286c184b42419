package benchrouting

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/sekgate/gateway/controlplane/shares"
	"github.com/sekgate/gateway/dataplane/fairq"
	"github.com/sekgate/gateway/dataplane/fleetshare"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/limits"
	"github.com/sekgate/gateway/dataplane/loadstat"
	"github.com/sekgate/gateway/dataplane/memmeter"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/dataplane/scrape"
	"github.com/sekgate/gateway/dataplane/server"
	"github.com/sekgate/gateway/dataplane/startfeed"
	"github.com/sekgate/gateway/internal/feedbus"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

const model = "bench-llm"

// engine is every replica's scheduler (the first has one slot in workloads with SlowFirst).
var engine = simulator.EngineConfig{Slots: 4, Overhead: 15 * time.Millisecond, PrefillPerToken: 600 * time.Microsecond,
	PerOutputToken: 10 * time.Millisecond, CacheBlocks: 640}

// warmHomes is the nodes' --warm-homes (a node's default: on).
var warmHomes = true

// startFeed is whether several nodes share their starts on a start feed (the fleet's
// recommended set-up: the control plane's --start-feed-listen, the nodes' --start-feed-url).
var startFeed = true

// stack is one run's replicas and, for gateway policies, the data-plane nodes in front
// (behind a round-robin balancer when there are several).
type stack struct {
	sims   []*simulator.Server
	url    string   // the gateway's base URL: the balancer's or the only node's ("" for client-side policies)
	keys   []string // tenant i's API key
	cancel context.CancelFunc
	nodes  []*node
	lb     *balancer
	bus    *feedbus.Server // the start feed's NATS server (nil: none)
	pt     *passThrough    // a client-side policy's hops (Policy.Proxied)
	waits  *waitSampler
}

// node is one data-plane node of the deployment.
type node struct {
	srv *server.Server
	fq  *fairq.Queue
	url string
}

// startStack starts four fresh replicas (empty caches) and, for a gateway policy, nodes
// data-plane nodes of one deployment ordering routes by it, each wired as in production
// (load registry, scraper, fair queue, limits shared by the nodes), all from the same
// snapshot, as a control plane would push it to every node of a region; for a proxied
// client-side policy, as many pass-through nodes (behind the balancer likewise).
func startStack(w *Workload, p Policy, nodes int) (*stack, error) {
	ctx, cancel := context.WithCancel(context.Background())
	st := &stack{cancel: cancel}
	if err := st.startReplicas(ctx, w); err != nil {
		st.close()
		return nil, err
	}
	st.waits = sampleWaits(ctx, st.sims)
	if p.Proxied {
		return st, st.startPassThrough(nodes)
	}
	if p.Routing == "" {
		return st, nil
	}
	snap, keys, err := fleetSnapshot(w, p.Routing, st.sims)
	if err != nil {
		st.close()
		return nil, err
	}
	st.keys = keys
	var urls []string
	fleet := shares.New(shares.Config{})
	feedURL := ""
	if startFeed && nodes > 1 {
		if st.bus, err = feedbus.Start("127.0.0.1:0", nil); err != nil {
			st.close()
			return nil, err
		}
		feedURL = st.bus.URL()
	}
	for i := range max(1, nodes) {
		id := fmt.Sprintf("node-%d", i)
		n, err := startNode(ctx, snap, max(1, nodes), fleetPoster{fleet, id}, feedURL, id)
		if err != nil {
			st.close()
			return nil, err
		}
		st.nodes = append(st.nodes, n)
		urls = append(urls, n.url)
	}
	st.url = urls[0]
	if len(urls) > 1 {
		if st.lb, err = startBalancer("127.0.0.1:0", urls, nil); err != nil {
			st.close()
			return nil, err
		}
		st.url = st.lb.url
	}
	return st, nil
}

// startPassThrough puts nodes pass-through nodes (behind the balancer when more than
// one) between a client-side policy and the replicas.
func (st *stack) startPassThrough(nodes int) error {
	var bases []string
	for _, s := range st.sims {
		bases = append(bases, s.BaseURL())
	}
	pt, err := startPassThrough(nodes, bases)
	if err != nil {
		st.close()
		return err
	}
	st.pt = pt
	if nodes > 1 {
		if st.lb, err = startBalancer("127.0.0.1:0", pt.nodeURLs(), pt); err != nil {
			st.close()
			return err
		}
	}
	return nil
}

// replicaURL is where a client-side policy sends a request for replica k, and the
// header value naming k (""): the replica itself, or through the pass-through nodes.
func (st *stack) replicaURL(k int) (string, string) {
	switch {
	case st.lb != nil && st.pt != nil:
		return st.lb.url, strconv.Itoa(k)
	case st.pt != nil:
		return st.pt.urls[0][k].String(), ""
	}
	return st.sims[k].BaseURL(), ""
}

func (st *stack) startReplicas(ctx context.Context, w *Workload) error {
	for i := range 4 {
		cfg := engine
		if i == 0 && w.SlowFirst {
			cfg.Slots = 1
		}
		sim := simulator.New(simulator.Config{Name: fmt.Sprintf("r%d", i), Engine: cfg,
			Knobs: simulator.Knobs{OutputTokens: 1000}, Models: []string{model}})
		if err := sim.Start(ctx, "127.0.0.1:0"); err != nil {
			return fmt.Errorf("replica %d: %w", i, err)
		}
		st.sims = append(st.sims, sim)
	}
	return nil
}

// fleetSnapshot is the deployment's snapshot: the model with policy, a route per replica
// in one region, and an account with its own key per tenant (the workload's limited
// tenant with its rate limit).
func fleetSnapshot(w *Workload, policy string, sims []*simulator.Server) (*snapshot.Snapshot, []string, error) {
	snap := &snapshot.Snapshot{Version: 1, GeneratedAt: time.Now(), IssuedAt: time.Now()}
	snap.Models = []snapshot.Model{{ID: model, Aliases: []string{}, Endpoint: snapshot.EndpointChat,
		ContextTokens: 32768, InputOrePerMillion: 100, OutputOrePerMillion: 300, Routing: policy}}
	for i, sim := range sims {
		snap.Routes = append(snap.Routes, snapshot.Route{ID: fmt.Sprintf("replica-%d", i), Model: model, Provider: "sim",
			BaseURL: sim.BaseURL(), Protocols: []string{snapshot.EndpointChat}, Region: "se-sto-1", Country: "SE", Weight: 1})
	}
	var keys []string
	for t := range w.Tenants {
		acct := fmt.Sprintf("acct_tenant%02d", t)
		id, secret, hash, err := apikey.New()
		if err != nil {
			return nil, nil, fmt.Errorf("key of %s: %w", acct, err)
		}
		keys = append(keys, secret)
		a := snapshot.Account{ID: acct, Customer: acct, Residency: "any", Models: []string{model}}
		if w.LimitRPS > 0 && t == w.Limited {
			a.Limits = &snapshot.Limits{RequestsPerSecond: w.LimitRPS}
		}
		snap.Accounts = append(snap.Accounts, a)
		snap.Keys = append(snap.Keys, snapshot.Key{ID: id, AccountID: acct, Hash: hash})
		snap.Balances = append(snap.Balances, snapshot.Balance{AccountID: acct, MicroSEK: 1 << 50})
	}
	return snap, keys, nil
}

// fleetPoster is a node's link to the fleet exchange, in process: the control plane's
// table answers it directly.
type fleetPoster struct {
	t  *shares.Table
	id string
}

func (p fleetPoster) Post(_ context.Context, r internalapi.FleetReport) (internalapi.FleetAnswer, error) {
	return p.t.Report(p.id, r), nil
}

// startNode starts one node serving snap on a loopback port, in the fleet exchange through
// fleet as in production (limits shared by demand, --limit-share-nodes the fallback;
// capacities, prefix placements and the fair queues' flows shared).
func startNode(ctx context.Context, snap *snapshot.Snapshot, share int, fleet fleetshare.Poster, feedURL, id string) (*node, error) {
	x, err := index.Build(snap)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	store := &index.Store{}
	store.Swap(x)
	meter := memmeter.New(0)
	meter.SeedBalances(snap.Balances, 1)
	sel := &routing.Selector{Loads: loadstat.NewRegistry(), WarmHomes: warmHomes}
	n := &node{fq: fairq.New(fairq.Config{})}
	sel.Loads.FreshFor = scrape.FreshFor(scrape.DefaultInterval) // as a node sets it
	go scrape.New(scrape.Config{Loads: sel.Loads}).Run(ctx)
	go n.fq.Run(ctx)
	lim := limits.New(limits.Config{ShareNodes: share})
	fx := fleetshare.New(fleetshare.Config{Limiter: lim, Poster: fleet, Capacity: sel.Loads, Prefixes: sel, Flows: n.fq,
		FallbackNodes: share, Logger: slog.New(slog.DiscardHandler)})
	sel.Place = n.fq.Place
	go fx.Run(ctx)
	if feedURL != "" {
		f, err := startfeed.OpenFor(startfeed.Config{URL: feedURL, Node: id, Logger: slog.New(slog.DiscardHandler)},
			startfeed.Node{Selector: sel, Queue: n.fq})
		if err != nil {
			return nil, fmt.Errorf("node: %w", err)
		}
		go f.Run(ctx)
	}
	n.srv, err = server.New(server.Config{Store: store, Meter: meter, Selector: sel, FairQueue: n.fq,
		Limiter: lim, Settings: server.Settings{MaxConnsPerAddr: -1, MaxConns: -1}})
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		n.srv.Shutdown()
		return nil, fmt.Errorf("node: %w", err)
	}
	go n.srv.Serve(ln)
	n.url = "http://" + ln.Addr().String() + "/v1"
	return n, nil
}

// prefixHitRate is the replicas' prefix-cache hits over queries, in tokens.
func (st *stack) prefixHitRate() float64 {
	var q, h int64
	for _, s := range st.sims {
		e := s.Engine()
		q, h = q+e.Queries, h+e.Hits
	}
	if q == 0 {
		return 0
	}
	return float64(h) / float64(q)
}

func (st *stack) close() {
	st.lb.close()
	st.pt.close()
	for _, n := range st.nodes {
		n.srv.Shutdown()
	}
	st.cancel()
	for _, s := range st.sims {
		s.Close()
	}
	if st.bus != nil {
		st.bus.Close()
	}
}
