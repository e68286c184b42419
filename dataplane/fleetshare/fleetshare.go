// Package fleetshare is a data-plane node's side of the fleet exchange: every interval it
// reports to the control plane (internalapi.PathFleet) the demand of its limited keys and
// accounts, the server capacity it learned per route, the prefix keys it sent where and its
// fair queue's flows, and applies the answer: its share of each limit (dataplane/limits),
// the fleet's capacity for routes it knows none of (dataplane/loadstat), the other nodes'
// prefix placements (dataplane/routing) and their requests in flight per account
// (dataplane/fairq). Nothing of it is on the request path.
//
// # Fallback
//
// When no answer arrived for Missed intervals (the control plane is down or cut off), the
// node enforces a conservative local share: every limit divided by the number of live
// nodes the last answer gave, or by Config.FallbackNodes (--limit-share-nodes) when it
// never had one; its fair queue judges shares by its own flows alone. It says so in a log line on each change and in the
// gateway_fleet_limits_fallback gauge, and keeps serving; the first answer ends it.
package fleetshare

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sekgate/gateway/dataplane/fairq"
	"github.com/sekgate/gateway/dataplane/limits"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/shared/internalapi"
)

// Defaults and bounds.
const (
	DefaultInterval = time.Second
	// Missed is how many intervals without an answer start the fallback.
	Missed = 3
)

// Limiter is what the exchange needs of the node's limiter (*limits.Limiter).
type Limiter interface {
	Demand() (keys, accounts []limits.Demand)
	SetShares(limits.Shares)
}

// Prefixes is what the exchange needs of the node's route selector (*routing.Selector): the
// prefix keys it sent since a time, and learning where the other nodes sent theirs.
type Prefixes interface {
	Placements(since int64, limit int) []routing.Placement
	Learn(ps []routing.Placement, now int64)
}

// Capacity is what the exchange needs of the node's load registry (*loadstat.Registry).
type Capacity interface {
	LearnedSlots(now int64) map[string]int64
	SeedSlots(slots map[string]int64, now int64)
}

// Flows is what the exchange needs of the node's fair queue (*fairq.Queue): its flows, and
// learning the other nodes' requests in flight per account and the accounts active
// anywhere.
type Flows interface {
	Loads(limit int) []fairq.FlowLoad
	SetFleet(fairq.Fleet)
}

// Poster sends a report to the control plane and returns its answer (*LinkPoster).
type Poster interface {
	Post(ctx context.Context, r internalapi.FleetReport) (internalapi.FleetAnswer, error)
}

// Config configures an Exchange.
type Config struct {
	Limiter Limiter // required
	Poster  Poster  // required
	// Capacity, when set, reports learned capacities and takes the fleet's.
	Capacity Capacity
	// Prefixes, when set, reports the node's prefix placements and learns the fleet's.
	Prefixes Prefixes
	// Flows, when set, reports the fair queue's flows and hands it the fleet's.
	Flows Flows
	// Region is the node's region (--region), reported so that the fleet's answer places
	// the node among the nodes sharing its servers.
	Region string
	// StartFeed, when set, is the node's start feed's state, reported for operators
	// (internalapi.FleetReport.StartFeed; startfeed.Feed.State).
	StartFeed func() string
	// Interval between reports (default 1 s).
	Interval time.Duration
	// FallbackNodes divides every limit in the fallback until an answer told the number
	// of live nodes (default 1).
	FallbackNodes int
	// Now is the clock (default time.Now); Logger (default slog.Default()).
	Now    func() time.Time
	Logger *slog.Logger
}

// Exchange runs the node's side of the fleet exchange. Safe for concurrent use.
type Exchange struct {
	cfg Config

	mu         sync.Mutex
	lastReport time.Time // when the last report was made (the demand window's start)
	placedTo   int64     // unix ns up to which placements were reported
	placeSeq   uint64    // the fleet's placement sequence taken up to
	lastAnswer time.Time // when the last answer arrived (the start, before any)
	nodes      int       // live nodes of the last answer (FallbackNodes before any)
	pool       int       // of them, those of the node's region (likewise)

	fallback atomic.Bool
}

// New returns an Exchange; its clock starts now, so the fallback begins Missed intervals
// from now unless an answer arrives.
func New(cfg Config) *Exchange {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.FallbackNodes <= 0 {
		cfg.FallbackNodes = 1
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	now := cfg.Now()
	if cfg.Flows != nil {
		// Until an answer says otherwise, the node counts its part of the servers' free
		// slots as of the fallback's node count.
		cfg.Flows.SetFleet(fairq.Fleet{Nodes: cfg.FallbackNodes})
	}
	return &Exchange{cfg: cfg, lastReport: now, lastAnswer: now, nodes: cfg.FallbackNodes, pool: cfg.FallbackNodes}
}

// Fallback reports whether the node enforces its fallback share.
func (x *Exchange) Fallback() bool { return x.fallback.Load() }

// Run reports every interval until ctx ends.
func (x *Exchange) Run(ctx context.Context) {
	t := time.NewTicker(x.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			x.Step(ctx)
		}
	}
}

// Step makes one report and applies its answer, or, without one, checks whether the
// fallback begins. A report waits for its answer at most one interval.
func (x *Exchange) Step(ctx context.Context) {
	rep := x.report()
	ctx, cancel := context.WithTimeout(ctx, x.cfg.Interval)
	defer cancel()
	ans, err := x.cfg.Poster.Post(ctx, rep)
	if err != nil {
		x.cfg.Logger.Debug("fleet report not answered", "err", err)
		x.checkFallback()
		return
	}
	x.apply(ans)
}

// report gathers the demand since the last report and the capacities learned.
func (x *Exchange) report() internalapi.FleetReport {
	now := x.cfg.Now()
	x.mu.Lock()
	window := now.Sub(x.lastReport)
	x.lastReport = now
	placedTo, seq := x.placedTo, x.placeSeq
	x.placedTo = now.UnixNano()
	x.mu.Unlock()
	keys, accts := x.cfg.Limiter.Demand()
	rep := internalapi.FleetReport{IntervalMs: x.cfg.Interval.Milliseconds(), WindowMs: max(window.Milliseconds(), 1),
		Fallback: x.fallback.Load(), Keys: wire(keys), Accounts: wire(accts)}
	rep.Region = x.cfg.Region
	if x.cfg.StartFeed != nil {
		rep.StartFeed = x.cfg.StartFeed()
	}
	if x.cfg.Capacity != nil {
		for id, s := range x.cfg.Capacity.LearnedSlots(now.UnixNano()) {
			rep.Routes = append(rep.Routes, internalapi.RouteSlots{RouteID: id, Slots: s})
		}
	}
	if x.cfg.Prefixes != nil {
		rep.PlacementsSince = seq
		for _, p := range x.cfg.Prefixes.Placements(placedTo, internalapi.MaxFleetPlacements) {
			rep.Placements = append(rep.Placements, internalapi.Placement{Key: p.Key, Tag: p.Tag,
				AgoMs: max(now.UnixNano()-p.At, 0) / int64(time.Millisecond)})
		}
	}
	if x.cfg.Flows != nil {
		for _, f := range x.cfg.Flows.Loads(internalapi.MaxFleetFlows) {
			rep.Flows = append(rep.Flows, internalapi.FlowLoad{Account: f.Account, InFlight: f.InFlight, Weight: f.Weight})
		}
	}
	return rep
}

// learn takes the fleet's placements of an answer received at now.
func (x *Exchange) learn(a internalapi.FleetAnswer, now time.Time) {
	if x.cfg.Prefixes == nil {
		return
	}
	ps := make([]routing.Placement, 0, len(a.Placements))
	for _, p := range a.Placements {
		ps = append(ps, routing.Placement{Key: p.Key, Tag: p.Tag, At: now.UnixNano() - p.AgoMs*int64(time.Millisecond)})
	}
	x.cfg.Prefixes.Learn(ps, now.UnixNano())
	x.mu.Lock()
	x.placeSeq = a.PlacementSeq
	x.mu.Unlock()
}

func wire(ds []limits.Demand) []internalapi.FleetDemand {
	out := make([]internalapi.FleetDemand, 0, min(len(ds), internalapi.MaxFleetEntries))
	for _, d := range ds {
		if len(out) == internalapi.MaxFleetEntries {
			break
		}
		out = append(out, internalapi.FleetDemand{ID: d.ID, Attempts: d.Attempts, InFlight: d.InFlight})
	}
	return out
}

// apply installs an answer's shares and capacities and ends the fallback.
func (x *Exchange) apply(a internalapi.FleetAnswer) {
	now := x.cfg.Now()
	nodes := max(a.Nodes, 1)
	x.cfg.Limiter.SetShares(limits.Shares{Default: 1 / float64(nodes), Keys: a.Keys, Accounts: a.Accounts})
	if x.cfg.Capacity != nil {
		x.cfg.Capacity.SeedSlots(a.Routes, now.UnixNano())
	}
	x.learn(a, now)
	pool, rank := a.RegionNodes, a.RegionRank
	if pool <= 0 { // an older control plane: the whole fleet
		pool, rank = nodes, a.Rank
	}
	if x.cfg.Flows != nil {
		// The counts last until the fallback would begin: an answer renews them first.
		x.cfg.Flows.SetFleet(fairq.Fleet{Others: a.FlowsElsewhere, Weights: a.FlowWeights, Nodes: pool, Rank: rank,
			TTL: Missed * x.cfg.Interval})
	}
	x.mu.Lock()
	prev := x.nodes
	x.lastAnswer, x.nodes, x.pool = now, nodes, pool
	x.mu.Unlock()
	if prev != nodes {
		x.cfg.Logger.Info("fleet: live nodes changed", "nodes", nodes, "was", prev)
	}
	if x.fallback.Swap(false) {
		x.cfg.Logger.Info("fleet limits: the control plane answers again; enforcing this node's fleet share", "nodes", nodes)
	}
}

// checkFallback starts the fallback when no answer arrived for Missed intervals.
func (x *Exchange) checkFallback() {
	now := x.cfg.Now()
	x.mu.Lock()
	silent, nodes, pool := now.Sub(x.lastAnswer), x.nodes, x.pool
	x.mu.Unlock()
	if silent < Missed*x.cfg.Interval || x.fallback.Load() {
		return
	}
	x.cfg.Limiter.SetShares(limits.EqualShares(nodes))
	if x.cfg.Flows != nil {
		x.cfg.Flows.SetFleet(fairq.Fleet{Nodes: pool}) // no counts, no place: no turns
	}
	x.fallback.Store(true)
	x.cfg.Logger.Warn("fleet limits: no answer from the control plane; enforcing the fallback share of every limit",
		"silent", silent.Round(time.Millisecond), "divided_by", nodes)
}

// Collectors are the exchange's metrics: gateway_fleet_limits_fallback (1 while the
// fallback share is enforced) and gateway_fleet_nodes (live nodes of the last answer).
func (x *Exchange) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gateway_fleet_limits_fallback",
			Help: "1 while this node enforces its local fallback share of account and key limits (no fleet answer for three intervals), else 0."},
			func() float64 {
				if x.fallback.Load() {
					return 1
				}
				return 0
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gateway_fleet_nodes",
			Help: "Live data-plane nodes sharing the limits, as the last fleet answer said (the fallback divisor before any)."},
			func() float64 {
				x.mu.Lock()
				defer x.mu.Unlock()
				return float64(x.nodes)
			}),
	}
}
