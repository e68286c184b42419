package benchrouting

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/sekgate/gateway/dataplane/fairq"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/loadstat"
	"github.com/sekgate/gateway/dataplane/memmeter"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/dataplane/scrape"
	"github.com/sekgate/gateway/dataplane/server"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/snapshot"
)

const model = "bench-llm"

// engine is every replica's scheduler (the first has one slot in workloads with SlowFirst).
var engine = simulator.EngineConfig{Slots: 4, Overhead: 15 * time.Millisecond, PrefillPerToken: 600 * time.Microsecond,
	PerOutputToken: 10 * time.Millisecond, CacheBlocks: 640}

// stack is one run's replicas and, for gateway policies, a data-plane server in front.
type stack struct {
	sims   []*simulator.Server
	url    string   // the gateway's base URL ("" for client-side policies)
	keys   []string // tenant i's API key
	cancel context.CancelFunc
	srv    *server.Server
}

// startStack starts four fresh replicas (empty caches) and, when policy names a gateway
// policy (routing field), a gateway node with the node's wiring: load registry, scraper,
// fair queue.
func startStack(w *Workload, policy string, gateway bool) (*stack, error) {
	ctx, cancel := context.WithCancel(context.Background())
	st := &stack{cancel: cancel}
	for i := range 4 {
		cfg := engine
		if i == 0 && w.SlowFirst {
			cfg.Slots = 1
		}
		sim := simulator.New(simulator.Config{Name: fmt.Sprintf("r%d", i), Engine: cfg,
			Knobs: simulator.Knobs{OutputTokens: 1000}, Models: []string{model}})
		if err := sim.Start(ctx, "127.0.0.1:0"); err != nil {
			st.close()
			return nil, err
		}
		st.sims = append(st.sims, sim)
	}
	if !gateway {
		return st, nil
	}
	snap := &snapshot.Snapshot{Version: 1, GeneratedAt: time.Now(), IssuedAt: time.Now()}
	snap.Models = []snapshot.Model{{ID: model, Aliases: []string{}, Endpoint: snapshot.EndpointChat,
		ContextTokens: 32768, InputOrePerMillion: 100, OutputOrePerMillion: 300, Routing: policy}}
	for i, sim := range st.sims {
		snap.Routes = append(snap.Routes, snapshot.Route{ID: fmt.Sprintf("replica-%d", i), Model: model, Provider: "sim",
			BaseURL: sim.BaseURL(), Protocols: []string{snapshot.EndpointChat}, Region: "se-sto-1", Country: "SE", Weight: 1})
	}
	for t := range w.Tenants {
		acct := fmt.Sprintf("acct_tenant%02d", t)
		id, secret, hash, err := apikey.New()
		if err != nil {
			st.close()
			return nil, err
		}
		st.keys = append(st.keys, secret)
		snap.Accounts = append(snap.Accounts, snapshot.Account{ID: acct, Customer: acct, Residency: "any", Models: []string{model}})
		snap.Keys = append(snap.Keys, snapshot.Key{ID: id, AccountID: acct, Hash: hash})
		snap.Balances = append(snap.Balances, snapshot.Balance{AccountID: acct, MicroSEK: 1 << 50})
	}
	x, err := index.Build(snap)
	if err != nil {
		st.close()
		return nil, err
	}
	store := &index.Store{}
	store.Swap(x)
	meter := memmeter.New(0)
	meter.SeedBalances(snap.Balances, 1)
	sel := &routing.Selector{Loads: loadstat.NewRegistry()}
	fq := fairq.New(fairq.Config{})
	go scrape.New(scrape.Config{Loads: sel.Loads}).Run(ctx)
	go fq.Run(ctx)
	st.srv, err = server.New(server.Config{Store: store, Meter: meter, Selector: sel, FairQueue: fq,
		MaxConnsPerAddr: -1, MaxConns: -1})
	if err != nil {
		st.close()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		st.close()
		return nil, err
	}
	go st.srv.Serve(ln)
	st.url = "http://" + ln.Addr().String() + "/v1"
	return st, nil
}

// prefixHitRate is the replicas' prefix-cache hits over queries, in tokens.
func (st *stack) prefixHitRate() float64 {
	var q, h int64
	for _, s := range st.sims {
		sq, sh := s.PrefixCache()
		q, h = q+sq, h+sh
	}
	if q == 0 {
		return 0
	}
	return float64(h) / float64(q)
}

func (st *stack) close() {
	if st.srv != nil {
		st.srv.Shutdown()
	}
	st.cancel()
	for _, s := range st.sims {
		s.Close()
	}
}
