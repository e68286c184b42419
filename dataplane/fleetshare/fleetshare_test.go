package fleetshare

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sekgate/gateway/dataplane/fairq"
	"github.com/sekgate/gateway/dataplane/limits"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/shared/internalapi"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time       { return c.t }
func (c *clock) step(d time.Duration) { c.t = c.t.Add(d) }

type fakeLimiter struct {
	shares []limits.Shares
	demand []limits.Demand
}

func (f *fakeLimiter) Demand() (keys, accounts []limits.Demand) {
	d := f.demand
	f.demand = nil
	return nil, d
}
func (f *fakeLimiter) SetShares(s limits.Shares) { f.shares = append(f.shares, s) }

type fakeCapacity struct {
	learned map[string]int64
	seeded  map[string]int64
}

func (f *fakeCapacity) LearnedSlots(int64) map[string]int64   { return f.learned }
func (f *fakeCapacity) SeedSlots(s map[string]int64, _ int64) { f.seeded = s }
func (p *fakePoster) Post(_ context.Context, r internalapi.FleetReport) (internalapi.FleetAnswer, error) {
	p.reports = append(p.reports, r)
	if p.err != nil {
		return internalapi.FleetAnswer{}, p.err
	}
	return p.answer, nil
}

type fakePoster struct {
	reports []internalapi.FleetReport
	answer  internalapi.FleetAnswer
	err     error
}

// TestFallbackTransitions: without answers the node keeps its shares for three
// intervals, then enforces limit/N (N: --limit-share-nodes before any answer, the last
// answer's live nodes after), says so once per change in the log and the gauge, and the
// first answer ends it.
func TestFallbackTransitions(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	lim, capy := &fakeLimiter{}, &fakeCapacity{learned: map[string]int64{"r1": 6}}
	post := &fakePoster{err: errors.New("connection refused")}
	var logs bytes.Buffer
	x := New(Config{Limiter: lim, Poster: post, Capacity: capy, Interval: time.Second, FallbackNodes: 2, Now: c.now,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	gauge := x.Collectors()[0]
	step := func() {
		c.step(time.Second)
		x.Step(context.Background())
	}
	expect := func(what string, fallback bool, shares int) {
		t.Helper()
		if x.Fallback() != fallback || len(lim.shares) != shares {
			t.Fatalf("%s: fallback %v with %d share updates, want %v with %d", what, x.Fallback(), len(lim.shares), fallback, shares)
		}
		want := 0.0
		if fallback {
			want = 1
		}
		if got := testutil.ToFloat64(gauge.(prometheus.Collector)); got != want {
			t.Fatalf("%s: gauge %v", what, got)
		}
	}
	step()
	step()
	expect("two intervals silent", false, 0)
	step()
	expect("three intervals silent", true, 1)
	if s := lim.shares[0]; s.Default != 0.5 || s.Accounts != nil {
		t.Fatalf("fallback before any answer: %+v, want 1/2 (--limit-share-nodes)", s)
	}
	step()
	expect("still silent", true, 1) // no new share update, no new log line
	// The control plane answers: shares and capacity applied, fallback over.
	post.err, post.answer = nil, internalapi.FleetAnswer{Nodes: 3, Accounts: map[string]float64{"a": 0.6}, Routes: map[string]int64{"r1": 8}}
	lim.demand = []limits.Demand{{ID: "a", Attempts: 15, InFlight: 2}}
	step()
	expect("answered", false, 2)
	if s := lim.shares[1]; s.Default != 1.0/3 || s.Accounts["a"] != 0.6 || capy.seeded["r1"] != 8 {
		t.Fatalf("applied %+v, seeded %v", s, capy.seeded)
	}
	r := post.reports[len(post.reports)-1]
	if !r.Fallback || r.WindowMs != 1000 || r.IntervalMs != 1000 || len(r.Accounts) != 1 || r.Accounts[0].Attempts != 15 ||
		len(r.Routes) != 1 || r.Routes[0].Slots != 6 {
		t.Fatalf("report %+v", r)
	}
	// Cut again: the fallback now divides by the 3 live nodes last known.
	post.err = errors.New("timeout")
	step()
	step()
	expect("two intervals after the answer", false, 2)
	step()
	expect("cut again", true, 3)
	if s := lim.shares[2]; s.Default != 1.0/3 || len(s.Accounts) != 0 {
		t.Fatalf("fallback after an answer of 3 nodes: %+v", s)
	}
	if n := strings.Count(logs.String(), "fleet limits:"); n != 3 {
		t.Fatalf("%d log lines on the 3 changes:\n%s", n, logs.String())
	}
}

type fakePrefixes struct {
	since   []int64
	own     []routing.Placement
	learned []routing.Placement
}

func (f *fakePrefixes) Placements(since int64, _ int) []routing.Placement {
	f.since = append(f.since, since)
	return f.own
}
func (f *fakePrefixes) Learn(ps []routing.Placement, _ int64) { f.learned = append(f.learned, ps...) }

// TestPlacementsExchanged: a report carries the node's placements since its last report,
// aged; an answer's placements are learned at their time, and the next report continues
// from the answer's sequence.
func TestPlacementsExchanged(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)}
	pre := &fakePrefixes{own: []routing.Placement{{Key: 5, Tag: 3, At: c.t.Add(-300 * time.Millisecond).UnixNano()}}}
	post := &fakePoster{answer: internalapi.FleetAnswer{Nodes: 2, PlacementSeq: 42,
		Placements: []internalapi.Placement{{Key: 6, Tag: 4, AgoMs: 1500}}}}
	x := New(Config{Limiter: &fakeLimiter{}, Poster: post, Prefixes: pre, Now: c.now})
	c.step(time.Second)
	x.Step(context.Background())
	r := post.reports[0]
	if len(r.Placements) != 1 || r.Placements[0].Key != 5 || r.Placements[0].AgoMs != 1300 || r.PlacementsSince != 0 {
		t.Fatalf("report %+v", r)
	}
	if len(pre.learned) != 1 || pre.learned[0].Key != 6 || pre.learned[0].At != c.t.Add(-1500*time.Millisecond).UnixNano() {
		t.Fatalf("learned %+v", pre.learned)
	}
	c.step(time.Second)
	x.Step(context.Background())
	if r := post.reports[1]; r.PlacementsSince != 42 || pre.since[1] != c.t.Add(-time.Second).UnixNano() {
		t.Fatalf("second report since %d, placements after %d", r.PlacementsSince, pre.since[1])
	}
}

var _ Flows = (*fairq.Queue)(nil)

type fakeFlows struct {
	own []fairq.FlowLoad
	set []fairq.Fleet
}

func (f *fakeFlows) Loads(int) []fairq.FlowLoad { return f.own }
func (f *fakeFlows) SetFleet(fl fairq.Fleet)    { f.set = append(f.set, fl) }

// TestFlowsExchanged: the queue starts with the fallback's node count; a report carries
// the fair queue's flows; an answer's other nodes' counts, active accounts, node count and
// place go to the queue for three intervals, and the fallback drops the counts and the
// place and keeps the node count.
func TestFlowsExchanged(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)}
	fl := &fakeFlows{own: []fairq.FlowLoad{{Account: "burst", InFlight: 4, Weight: 1}, {Account: "big", Weight: 3}}}
	ans := internalapi.FleetAnswer{Nodes: 3, Rank: 2, FlowsElsewhere: map[string]int64{"burst": 9},
		FlowWeights: map[string]int64{"burst": 1, "big": 3, "quiet": 1}}
	post := &fakePoster{answer: ans}
	x := New(Config{Limiter: &fakeLimiter{}, Poster: post, Flows: fl, Interval: time.Second, Now: c.now, FallbackNodes: 2})
	if len(fl.set) != 1 || !reflect.DeepEqual(fl.set[0], fairq.Fleet{Nodes: 2}) {
		t.Fatalf("queue given %+v before any answer, want the fallback's 2 nodes", fl.set)
	}
	c.step(time.Second)
	x.Step(context.Background())
	want := []internalapi.FlowLoad{{Account: "burst", InFlight: 4, Weight: 1}, {Account: "big", Weight: 3}}
	if got := post.reports[0].Flows; !reflect.DeepEqual(got, want) {
		t.Fatalf("report flows %+v, want %+v", got, want)
	}
	wantSet := fairq.Fleet{Others: ans.FlowsElsewhere, Weights: ans.FlowWeights, Nodes: 3, Rank: 2, TTL: 3 * time.Second}
	if len(fl.set) != 2 || !reflect.DeepEqual(fl.set[1], wantSet) {
		t.Fatalf("queue given %+v, want the answer's flows and place of 3 nodes for 3s", fl.set)
	}
	post.err = errors.New("connection refused")
	for range Missed {
		c.step(time.Second)
		x.Step(context.Background())
	}
	if !x.Fallback() || len(fl.set) != 3 || !reflect.DeepEqual(fl.set[2], fairq.Fleet{Nodes: 3}) {
		t.Fatalf("fallback %v, queue given %+v: want the fleet's counts and place dropped, 3 nodes kept", x.Fallback(), fl.set)
	}
}

// The node's start feed state goes with each report, as it is when the report is made.
func TestStartFeedReported(t *testing.T) {
	state := internalapi.StartFeedSplit
	post := &fakePoster{}
	x := New(Config{Limiter: &fakeLimiter{}, Poster: post, StartFeed: func() string { return state }})
	x.Step(context.Background())
	state = internalapi.StartFeedLive
	x.Step(context.Background())
	New(Config{Limiter: &fakeLimiter{}, Poster: post}).Step(context.Background())
	var got []string
	for _, r := range post.reports {
		got = append(got, r.StartFeed)
	}
	if want := []string{"split", "live", ""}; !reflect.DeepEqual(got, want) {
		t.Fatalf("reported feeds %q, want %q", got, want)
	}
}

// The fair queue is placed among the nodes of the node's region (those sharing its
// servers), the limits among the whole fleet; an answer without the region's count (an
// older control plane) places it in the whole fleet; the fallback keeps the region's count.
func TestRegionPlacesTheQueue(t *testing.T) {
	fl := &fakeFlows{}
	lim := &fakeLimiter{}
	post := &fakePoster{answer: internalapi.FleetAnswer{Nodes: 4, Rank: 3, RegionNodes: 2, RegionRank: 2}}
	c := &clock{t: time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)}
	x := New(Config{Limiter: lim, Poster: post, Flows: fl, Region: "se-sto", Interval: time.Second, Now: c.now})
	x.Step(context.Background())
	if post.reports[0].Region != "se-sto" {
		t.Fatalf("reported region %q", post.reports[0].Region)
	}
	if got := fl.set[len(fl.set)-1]; got.Nodes != 2 || got.Rank != 2 {
		t.Fatalf("queue placed %d of %d, want 2 of 2 (its region)", got.Rank, got.Nodes)
	}
	if got := lim.shares[len(lim.shares)-1].Default; got != 0.25 {
		t.Fatalf("limits' default share %v, want a quarter (the fleet)", got)
	}
	post.err = errors.New("connection refused")
	for range Missed {
		c.step(time.Second)
		x.Step(context.Background())
	}
	if got := fl.set[len(fl.set)-1]; !x.Fallback() || got.Nodes != 2 || got.Rank != 0 {
		t.Fatalf("fallback %v, queue placed %d of %d; want the region's 2 and no place", x.Fallback(), got.Rank, got.Nodes)
	}
	post.err, post.answer = nil, internalapi.FleetAnswer{Nodes: 4, Rank: 3}
	x.Step(context.Background())
	if got := fl.set[len(fl.set)-1]; got.Nodes != 4 || got.Rank != 3 {
		t.Fatalf("queue placed %d of %d by an older answer, want 3 of 4", got.Rank, got.Nodes)
	}
}
