// Package shares is the control plane's side of the fleet exchange: it keeps, in memory,
// the last report of every data-plane node (internalapi.FleetReport) and answers each
// report with that node's share of every limit it reported and the fleet's known server
// capacity per route, and hands each node the prefix placements the others made
// (placements.go) and the other nodes' fair-queue flows (flows.go).
//
// # Shares
//
// A node's demand for a key or account is the requests it checked against that entry's
// limits over its last window, per second (admitted and refused alike, so a node that
// refuses still shows what its clients ask of it). With live nodes 1..L of demands
// d_1..d_L and D their sum, node i's share is
//
//	share_i = (d_i + ε) / (D + L·ε)
//
// so the shares of the L nodes sum to 1 and follow the traffic the load balancer sends
// each, while ε (Config.Epsilon, 1 request/s by default) keeps a node whose demand is
// small from being shut out and makes idle fleets share equally. A node that reported
// no demand for an entry is given none and enforces 1/L for it (internalapi.FleetAnswer).
//
// A node is live while its last report is younger than three of its intervals; a node that
// stops reporting drops out of every sum at that age, and one that starts reporting
// counts from its first report: fleets grow and shrink without an operator's edit.
//
// The state is one control plane's memory: several control-plane replicas each see the
// nodes that report to them.
package shares

import (
	"log/slog"
	"sync"
	"time"

	"github.com/sekgate/gateway/shared/internalapi"
)

// Defaults of Config.
const (
	DefaultEpsilon = 1.0
	// Missed is how many of its intervals a node may stay silent and still count.
	Missed = 3
	// forgetAfter is how long a silent node stays listed (its mode, for operators).
	forgetAfter = 10 * time.Minute
)

// Config configures a Table.
type Config struct {
	// Epsilon is ε of the share formula, in requests per second (default 1).
	Epsilon float64
	// Now is the clock (default time.Now); Logger (default slog.Default()).
	Now    func() time.Time
	Logger *slog.Logger
}

// Table holds the nodes' last reports. Safe for concurrent use.
type Table struct {
	cfg    Config
	mu     sync.Mutex
	nodes  map[string]*node
	placed placements
}

// node is one node's last report, demands as rates per second.
type node struct {
	at       time.Time
	ttl      time.Duration
	fallback bool
	feed     string // internalapi.FleetReport.StartFeed
	region   string
	accounts map[string]float64
	keys     map[string]float64
	routes   map[string]int64
	flows    map[string]flowLoad
}

// New returns an empty Table.
func New(cfg Config) *Table {
	if cfg.Epsilon <= 0 {
		cfg.Epsilon = DefaultEpsilon
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Table{cfg: cfg, nodes: make(map[string]*node)}
}

// Report records node id's report and returns its answer.
func (t *Table) Report(id string, r internalapi.FleetReport) internalapi.FleetAnswer {
	now := t.cfg.Now()
	n := &node{at: now, ttl: Missed * time.Duration(max(r.IntervalMs, 1)) * time.Millisecond, fallback: r.Fallback, feed: r.StartFeed, region: r.Region,
		accounts: rates(r.Accounts, r.WindowMs), keys: rates(r.Keys, r.WindowMs), routes: make(map[string]int64, len(r.Routes)),
		flows: flowsOf(r.Flows)}
	for _, x := range r.Routes {
		if x.Slots > 0 {
			n.routes[x.RouteID] = max(n.routes[x.RouteID], x.Slots)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.nodes[id]; !ok {
		t.cfg.Logger.Info("fleet: node joined", "node", id, "nodes", len(t.live(now))+1)
	}
	t.nodes[id] = n
	live := t.live(now)
	a := internalapi.FleetAnswer{Nodes: len(live), Rank: rank(id, live),
		Accounts: t.shares(id, live, func(x *node) map[string]float64 { return x.accounts }),
		Keys:     t.shares(id, live, func(x *node) map[string]float64 { return x.keys }),
		Routes:   capacity(live)}
	a.FlowsElsewhere, a.FlowWeights = fleetFlows(id, live)
	region := make(map[string]*node, len(live))
	for other, x := range live {
		if x.region == n.region {
			region[other] = x
		}
	}
	a.RegionNodes, a.RegionRank = len(region), rank(id, region)
	t.placed.add(id, r.Placements, now)
	a.Placements, a.PlacementSeq = t.placed.since(id, r.PlacementsSince, now)
	return a
}

// rank is node id's place among the live nodes ordered by ID, from 1.
func rank(id string, live map[string]*node) int {
	r := 1
	for other := range live {
		if other < id {
			r++
		}
	}
	return r
}

// rates turns counts over windowMs into rates per second (a window below 1 ms counts as 1 s).
func rates(ds []internalapi.FleetDemand, windowMs int64) map[string]float64 {
	secs := 1.0
	if windowMs > 0 {
		secs = float64(windowMs) / 1000
	}
	m := make(map[string]float64, len(ds))
	for _, d := range ds {
		m[d.ID] += float64(max(d.Attempts, 0)) / secs
	}
	return m
}

// live returns the nodes whose reports are fresh at now, forgetting long-silent ones.
func (t *Table) live(now time.Time) map[string]*node {
	out := make(map[string]*node, len(t.nodes))
	for id, n := range t.nodes {
		switch age := now.Sub(n.at); {
		case age <= n.ttl:
			out[id] = n
		case age > forgetAfter:
			delete(t.nodes, id)
		}
	}
	return out
}

// shares is node id's share of every entry of its report (of the map pick selects).
func (t *Table) shares(id string, live map[string]*node, pick func(*node) map[string]float64) map[string]float64 {
	mine := pick(live[id])
	if len(mine) == 0 {
		return nil
	}
	out := make(map[string]float64, len(mine))
	for entry, d := range mine {
		total := 0.0
		for _, n := range live {
			total += pick(n)[entry]
		}
		out[entry] = Share(d, total, len(live), t.cfg.Epsilon)
	}
	return out
}

// Share is the share formula: (d + ε) / (total + nodes·ε), in (0, 1] for d ≤ total and
// nodes ≥ 1.
func Share(d, total float64, nodes int, eps float64) float64 {
	return min(1, (d+eps)/(total+float64(max(nodes, 1))*eps))
}

// capacity is the largest capacity any live node learned, per route.
func capacity(live map[string]*node) map[string]int64 {
	var out map[string]int64
	for _, n := range live {
		for r, s := range n.routes {
			if out == nil {
				out = make(map[string]int64)
			}
			out[r] = max(out[r], s)
		}
	}
	return out
}

// Mode is what the fleet exchange knows of one node's limits.
type Mode struct {
	// Mode is "shared" (the node reported within three intervals and was not in its
	// fallback) or "fallback" (it said it was, or it has not reported since).
	Mode       string
	ReportedAt time.Time
	// Nodes is the number of live nodes now.
	Nodes int
	// StartFeed is the node's start feed as it last reported it ("" none).
	StartFeed string
}

// Modes returns the mode of every node that reported in the last ten minutes.
func (t *Table) Modes() map[string]Mode {
	now := t.cfg.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	live := t.live(now)
	out := make(map[string]Mode, len(t.nodes))
	for id, n := range t.nodes {
		m := Mode{Mode: "shared", ReportedAt: n.at, Nodes: len(live), StartFeed: n.feed}
		if _, ok := live[id]; !ok || n.fallback {
			m.Mode = "fallback"
		}
		out[id] = m
	}
	return out
}
