// Package loadstat keeps what a node knows of each upstream route's load: its own requests
// in flight there, moving averages of time to first token and time per output token, and
// the latest load the model server itself reported on its metrics endpoint (dataplane/scrape
// fills it). Everything on the request path is an atomic: no lock, no allocation.
//
// State is kept per route ID and base URL (like the circuit breakers), so it survives
// snapshot swaps while a route whose address changed starts fresh; the request path finds
// a route's state through the route's LoadMemo with one atomic load.
package loadstat

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/snapshot"
)

// ewmaShift sets the moving averages' weight of a new sample to 1/2^ewmaShift (1/8).
const ewmaShift = 3

// Route is the load state of one upstream route.
type Route struct {
	// ID is the route's ID; IDHash its xxhash, which rendezvous hashing mixes with a
	// request's key (the same on every node).
	ID     string
	IDHash uint64
	// MetricsURL is the route's metrics endpoint ("" when scraping is off).
	MetricsURL string

	inFlight atomic.Int64
	ttft     atomic.Int64 // moving average, ns; 0 before the first sample
	tpot     atomic.Int64 // moving average, ns per output token
	// promptBPT is the moving average of prompt bytes per token the server reported, in
	// thousandths (0 before the first sample).
	promptBPT atomic.Int64
	lastUsed  atomic.Int64 // unix ns of the last dispatch
	// Server-reported load (scrape): requests waiting and running, KV-cache use in
	// parts per million, and when it was read (unix ns; 0: never).
	srvWaiting, srvRunning, srvKV, srvAt atomic.Int64
	// srvInFlight is this node's in-flight count when the report was read; slots the
	// server's capacity as last seen (its running count while requests waited), learned
	// at slotsAt (unix ns) and trusted for SlotsFor.
	srvInFlight, slots, slotsAt atomic.Int64
	scrapeFails                 atomic.Int64
	// fleetSlots is the capacity the fleet learned (dataplane/fleetshare), seeded at
	// fleetAt (unix ns): used while the node has no server report of its own.
	fleetSlots, fleetAt atomic.Int64
	// cacheTokens is the size of the server's KV cache in tokens, as last reported (0:
	// never reported).
	cacheTokens atomic.Int64
	// pace is learned from the server's timing totals (pace.go).
	pace pace
	// others is the other nodes' requests started less those ended at the route, as far
	// as the start feed told (Registry.Heard); srvOthers its value when the server's
	// report was read. feed is told of this node's own (Registry.SetFeed).
	others, srvOthers atomic.Int64
	feed              *atomic.Pointer[feedBox]
}

// CacheTokens is the size of the route's server's KV cache in tokens as last reported
// (0: unknown).
func (r *Route) CacheTokens() int64 { return r.cacheTokens.Load() }

// Start counts a request dispatched to the route at now (unix ns); Done must follow.
func (r *Route) Start(now int64) {
	r.inFlight.Add(1)
	r.lastUsed.Store(now)
	r.tell(1)
}

// Done counts a request off the route.
func (r *Route) Done() {
	r.inFlight.Add(-1)
	r.tell(-1)
}

// tell passes a start (1) or an end (-1) of this node's to the feed, if any.
func (r *Route) tell(delta int64) {
	if r.feed == nil {
		return
	}
	if b := r.feed.Load(); b != nil {
		b.f.Moved(r.IDHash, delta)
	}
}

// InFlight is this node's number of requests at the route.
func (r *Route) InFlight() int64 { return r.inFlight.Load() }

// LastUsed is when this node last dispatched a request to the route (unix ns; 0: never).
func (r *Route) LastUsed() int64 { return r.lastUsed.Load() }

// ObserveTTFT adds a time-to-first-token sample.
func (r *Route) ObserveTTFT(d time.Duration) { ewma(&r.ttft, int64(d)) }

// ObserveTPOT adds a time-per-output-token sample.
func (r *Route) ObserveTPOT(d time.Duration) { ewma(&r.tpot, int64(d)) }

// ObservePrompt adds a sample of a prompt's size: bytes of its text, and the tokens its
// server reported for it.
func (r *Route) ObservePrompt(bytes, tokens int64) {
	if bytes > 0 && tokens > 0 && bytes < 1<<40 {
		ewma(&r.promptBPT, bytes*1000/tokens)
	}
}

// PromptBytesPerToken is the moving average of the route's prompts' bytes per token
// (ObservePrompt; 0 before the first sample).
func (r *Route) PromptBytesPerToken() float64 { return float64(r.promptBPT.Load()) / 1000 }

// TTFT and TPOT are the moving averages (0 before the first sample).
func (r *Route) TTFT() time.Duration { return time.Duration(r.ttft.Load()) }
func (r *Route) TPOT() time.Duration { return time.Duration(r.tpot.Load()) }

func ewma(v *atomic.Int64, x int64) {
	if x <= 0 {
		x = 1
	}
	for {
		old := v.Load()
		n := x
		if old != 0 {
			n = old + (x-old)>>ewmaShift
		}
		if v.CompareAndSwap(old, n) {
			return
		}
	}
}

// Report is the load a model server reported.
type Report struct {
	Waiting, Running int64
	// KV is the KV-cache use from 0 to 1 (-1: not reported).
	KV float64
	// CacheTokens is the size of the server's KV cache in tokens (0: not reported).
	CacheTokens int64
	// Timing is the server's timing totals (zero: not reported).
	Timing Timing
}

// Timing is what a model server reports of its requests' times since it started:
// totals, from which the route's pace is learned (Route.Pace). vLLM's: the sums of its
// histograms of the time its finished requests spent in prefill and in the running phase
// (prefill and decode), how many finished, and its prefix cache's queried and hit tokens.
type Timing struct {
	PrefillSeconds, InferenceSeconds float64
	Finished                         int64
	QueriedTokens, CachedTokens      int64
}

// SetServer stores a server's report read at now (unix ns); inFlightBefore is this node's
// in-flight count when the read began. The report is matched with the larger of that and
// the count now: requests this node finished during the read then never look like other
// nodes' requests at the server (which would hold requests back for nothing).
func (r *Route) SetServer(rep Report, now int64, inFlightBefore int64) {
	r.srvWaiting.Store(rep.Waiting)
	r.srvRunning.Store(rep.Running)
	kv := int64(-1)
	if rep.KV >= 0 {
		kv = int64(rep.KV * 1e6)
	}
	r.srvKV.Store(kv)
	if rep.CacheTokens > 0 {
		r.cacheTokens.Store(rep.CacheTokens)
	}
	r.pace.observe(rep.Timing)
	r.srvInFlight.Store(max(inFlightBefore, r.inFlight.Load()))
	r.srvOthers.Store(r.others.Load())
	switch slots := r.slots.Load(); {
	case rep.Waiting > 0 && rep.Running > 0:
		r.slots.Store(rep.Running) // full: its capacity now
		r.slotsAt.Store(now)
	case slots > 0 && rep.Running > slots:
		r.slots.Store(rep.Running) // more than thought
		r.slotsAt.Store(now)
	case slots > 0 && rep.Running == slots:
		r.slotsAt.Store(now) // full again at the capacity known: still true
	}
	r.srvAt.Store(now)
	r.scrapeFails.Store(0)
}

// ScrapeFailed counts a failed read of the route's metrics (the report already held fades
// with age).
func (r *Route) ScrapeFailed() { r.scrapeFails.Add(1) }

// SlotsFor is how long a server's capacity, learned while requests waited there, is
// trusted; then it is learned again the next time a queue forms.
const SlotsFor = 30 * time.Second

// View is a route's load as the scorer sees it at one instant.
type View struct {
	// InFlight is this node's own count.
	InFlight int64
	// Waiting and Running are the server's counts weighed by Fresh; KV its cache use
	// (0 to 1) weighed likewise. Fresh is 1 for a recent report and fades to 0 as it ages
	// (see Registry.FreshFor), so a stale signal gives way to the node's own count.
	Waiting, Running, KV, Fresh float64
	// Queue estimates the server's waiting queue now: the report's, moved by this node's
	// own dispatches and completions since, against the server's capacity once known
	// (weighed by Fresh like the report).
	Queue float64
	// Excess is the same estimate without the floor at zero once the server's capacity
	// is known (minus its free slots).
	Excess float64
	// Slots is the server's capacity when known (0 otherwise; see SlotsKnown).
	Slots float64
	// Moved is the requests started less those ended since the report, in Excess
	// (weighed by Fresh like it; 0 while the capacity is unknown): this node's own, and
	// the other nodes' as far as the start feed told (Registry.Heard; none without one).
	Moved float64
	// Heard is the other nodes' part of Moved.
	Heard float64
	// At is when the server's report was read (unix ns; 0 without one).
	At int64
}

// SlotsKnown reports whether the server's capacity is known.
func (v View) SlotsKnown() bool { return v.Slots > 0 }

// View returns the route's load at now (unix ns) with reports fresh for fresh and faded
// over as long again.
//
// Without a report (none yet, or faded out) but with a fresh capacity from the fleet
// (SeedSlots), the server is taken to run this node's requests against that capacity: the
// view is fresh, with Slots the fleet's capacity and Excess this node's in-flight count
// beyond it, so a node that just started does not send its first burst into a queue.
func (r *Route) View(now int64, fresh time.Duration) View {
	v := View{InFlight: r.inFlight.Load()}
	at := r.srvAt.Load()
	if at == 0 {
		return r.fleetView(v, now)
	}
	age := now - at
	switch {
	case age <= int64(fresh):
		v.Fresh = 1
	case age >= 2*int64(fresh):
		return r.fleetView(v, now)
	default:
		v.Fresh = float64(2*int64(fresh)-age) / float64(fresh)
	}
	w, run := r.srvWaiting.Load(), r.srvRunning.Load()
	v.At = at
	v.Waiting = v.Fresh * float64(w)
	v.Running = v.Fresh * float64(run)
	q := w
	if slots := r.slots.Load(); slots > 0 && now-r.slotsAt.Load() <= int64(SlotsFor) {
		heard := r.others.Load() - r.srvOthers.Load()
		moved := v.InFlight - r.srvInFlight.Load() + heard
		q = w + run + moved - slots
		v.Slots = float64(slots)
		v.Moved = v.Fresh * float64(moved)
		v.Heard = v.Fresh * float64(heard)
	}
	v.Excess = v.Fresh * float64(q)
	v.Queue = max(0, v.Excess)
	if kv := r.srvKV.Load(); kv > 0 {
		v.KV = v.Fresh * float64(kv) / 1e6
	}
	return v
}

// fleetView is view v (the node's own count only) with the fleet's capacity, when fresh.
func (r *Route) fleetView(v View, now int64) View {
	slots := r.fleetSlots.Load()
	if slots <= 0 || now-r.fleetAt.Load() > int64(SlotsFor) {
		return v
	}
	v.Fresh, v.Slots = 1, float64(slots)
	v.Excess = float64(v.InFlight - slots)
	v.Queue = max(0, v.Excess)
	return v
}

// LearnedSlots is the server capacity this node learned itself (SetServer) and still
// trusts at now (unix ns); 0 when none. A capacity seeded from the fleet is not included,
// so it is never reported back as learned.
func (r *Route) LearnedSlots(now int64) int64 {
	if s := r.slots.Load(); s > 0 && now-r.slotsAt.Load() <= int64(SlotsFor) {
		return s
	}
	return 0
}

// SeedSlots gives the route the fleet's capacity, learned by some node, at now (unix ns).
// It is trusted for SlotsFor and used only while the node has no report of its own.
func (r *Route) SeedSlots(slots, now int64) {
	r.fleetSlots.Store(slots)
	r.fleetAt.Store(now)
}

// Load is a route's requests at the server as this node sees them: the server's waiting
// plus running (weighed by freshness), or this node's own in-flight count when that is
// larger (a report is up to one scrape interval old; the node's own count is not).
func (v View) Load() float64 {
	return max(v.Waiting+v.Running, float64(v.InFlight))
}

// Registry holds the load state of every route a node has seen. The zero value is not
// usable; see NewRegistry.
type Registry struct {
	// FreshFor is how long a server report counts in full (default 187.5 ms: 3¾ of the
	// default scrape interval, scrape.FreshFor); it then fades out over as long again.
	FreshFor time.Duration
	mu       sync.Mutex
	byKey    map[key]*Route
	byHash   map[uint64][]*Route // by IDHash, for Heard
	feed     atomic.Pointer[feedBox]
}

// Feed is told of every start and end of this node's requests at a route (the route's
// IDHash; delta 1 or -1), to pass on to the other nodes (dataplane/startfeed). It is
// called on the request path and must not block.
type Feed interface {
	Moved(idHash uint64, delta int64)
}

type feedBox struct{ f Feed }

// SetFeed makes f the feed told of this node's starts and ends from now on (nil: none).
func (g *Registry) SetFeed(f Feed) {
	if f == nil {
		g.feed.Store(nil)
		return
	}
	g.feed.Store(&feedBox{f})
}

// Heard counts another node's start (delta 1) or end (-1) at the routes of ID hash
// idHash, as the start feed told: it moves their estimated load (View.Moved) until the
// next server report. A hash of no known route is ignored.
func (g *Registry) Heard(idHash uint64, delta int64) {
	g.mu.Lock()
	rs := g.byHash[idHash]
	g.mu.Unlock()
	for _, r := range rs {
		r.others.Add(delta)
	}
}

type key struct{ id, baseURL, metricsURL string }

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{FreshFor: 187500 * time.Microsecond, byKey: make(map[key]*Route), byHash: make(map[uint64][]*Route)}
}

// memo is what a route's LoadMemo holds: the state and its owner (two registries may share
// a snapshot in tests).
type memo struct {
	owner *Registry
	r     *Route
}

// For returns route r's state, creating it on first use.
func (g *Registry) For(r *index.Route) *Route {
	if m, ok := r.LoadMemo.Load().(memo); ok && m.owner == g {
		return m.r
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	k := key{r.ID, r.BaseURL, MetricsURL(r)}
	s := g.byKey[k]
	if s == nil {
		s = &Route{ID: r.ID, IDHash: xxhash.Sum64String(r.ID), MetricsURL: k.metricsURL, feed: &g.feed}
		g.byKey[k] = s
		g.byHash[s.IDHash] = append(g.byHash[s.IDHash], s)
	}
	r.LoadMemo.Store(memo{owner: g, r: s})
	return s
}

// Each calls fn with every route's state (the scraper, metrics).
func (g *Registry) Each(fn func(*Route)) {
	g.mu.Lock()
	all := make([]*Route, 0, len(g.byKey))
	for _, r := range g.byKey {
		all = append(all, r)
	}
	g.mu.Unlock()
	for _, r := range all {
		fn(r)
	}
}

// LearnedSlots returns, per route ID, the largest capacity this node learned itself and
// still trusts at now (unix ns).
func (g *Registry) LearnedSlots(now int64) map[string]int64 {
	out := map[string]int64{}
	g.Each(func(r *Route) {
		if s := r.LearnedSlots(now); s > 0 {
			out[r.ID] = max(out[r.ID], s)
		}
	})
	return out
}

// SeedSlots gives every route of an ID in slots the fleet's capacity for it, at now.
func (g *Registry) SeedSlots(slots map[string]int64, now int64) {
	if len(slots) == 0 {
		return
	}
	g.Each(func(r *Route) {
		if s, ok := slots[r.ID]; ok && s > 0 {
			r.SeedSlots(s, now)
		}
	})
}

// MetricsURL is the metrics endpoint of route r: its metrics_url; by default the
// server's /metrics (the base URL's scheme and host); "" when the route turns it off
// (metrics_url "off").
func MetricsURL(r *index.Route) string {
	switch r.MetricsURL {
	case "off":
		return ""
	case "":
		scheme := "http://"
		if r.UpstreamTLS {
			scheme = "https://"
		}
		return scheme + r.UpstreamHost + "/metrics"
	}
	return r.MetricsURL
}

// Retain forgets the load state of the replicas of discovered routes (IDs
// "<route>@<ip:port>") that live no longer names, so the scraper stops reading them and
// pods coming and going do not grow the registry; other routes' state is kept.
func (g *Registry) Retain(live func(id, baseURL string) bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k := range g.byKey {
		if _, _, replica := snapshot.SplitReplicaID(k.id); replica && !live(k.id, k.baseURL) {
			g.unhash(g.byKey[k])
			delete(g.byKey, k)
		}
	}
}

// unhash removes r from byHash (g.mu held).
func (g *Registry) unhash(r *Route) {
	rs := g.byHash[r.IDHash]
	for i, x := range rs {
		if x == r {
			rs = append(rs[:i:i], rs[i+1:]...)
			break
		}
	}
	if len(rs) == 0 {
		delete(g.byHash, r.IDHash)
		return
	}
	g.byHash[r.IDHash] = rs
}
