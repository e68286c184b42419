package loadstat

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/snapshot"
)

func route(id, base, metrics string) *index.Route {
	b, _ := snapshot.ParseBaseURL(base)
	return &index.Route{Route: snapshot.Route{ID: id, BaseURL: base, MetricsURL: metrics}, UpstreamHost: b.Host, UpstreamTLS: b.TLS}
}

func TestInFlightConcurrent(t *testing.T) {
	g := NewRegistry()
	r := g.For(route("a", "http://10.0.0.1:8000/v1", ""))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				r.Start(1)
				r.Done()
			}
		}()
	}
	r.Start(1)
	wg.Wait()
	if n := r.InFlight(); n != 1 {
		t.Fatalf("in flight %d, want 1", n)
	}
}

func TestStateSurvivesSnapshotSwap(t *testing.T) {
	g := NewRegistry()
	a := g.For(route("a", "http://h:1/v1", ""))
	a.Start(1)
	if b := g.For(route("a", "http://h:1/v1", "")); b != a {
		t.Fatal("same route in a new snapshot got new state")
	}
	if c := g.For(route("a", "http://h:2/v1", "")); c == a {
		t.Fatal("a moved route kept its old state")
	}
}

func TestMovingAverages(t *testing.T) {
	var r Route
	r.ObserveTTFT(800 * time.Millisecond)
	if r.TTFT() != 800*time.Millisecond {
		t.Fatalf("first sample: %v", r.TTFT())
	}
	for range 60 {
		r.ObserveTTFT(40 * time.Millisecond)
	}
	if d := r.TTFT(); d < 39*time.Millisecond || d > 45*time.Millisecond {
		t.Fatalf("after 60 samples of 40ms: %v", d)
	}
}

func TestViewFades(t *testing.T) {
	var r Route
	r.Start(0)
	fresh := 100 * time.Millisecond
	if v := r.View(0, fresh); v.Fresh != 0 || v.Load() != 1 {
		t.Fatalf("no report: %+v", v)
	}
	at := int64(time.Second)
	r.SetServer(Report{Waiting: 6, Running: 4, KV: 0.5}, at, 0)
	for _, tc := range []struct {
		age        time.Duration
		fresh      float64
		load, wait float64
	}{{0, 1, 10, 6}, {fresh, 1, 10, 6}, {fresh * 3 / 2, 0.5, 5, 3}, {2 * fresh, 0, 1, 0}, {time.Hour, 0, 1, 0}} {
		v := r.View(at+int64(tc.age), fresh)
		if v.Fresh != tc.fresh || v.Load() != tc.load || v.Waiting != tc.wait {
			t.Errorf("age %v: %+v load %v, want fresh %v load %v waiting %v", tc.age, v, v.Load(), tc.fresh, tc.load, tc.wait)
		}
	}
}

func TestMetricsURL(t *testing.T) {
	for _, tc := range []struct{ base, metrics, want string }{
		{"http://10.0.0.5:8000/v1", "", "http://10.0.0.5:8000/metrics"},
		{"https://vllm.example/v1", "", "https://vllm.example/metrics"},
		{"http://h:1/v1", "off", ""},
		{"http://h:1/v1", "http://h:9/prom", "http://h:9/prom"},
	} {
		if got := MetricsURL(route("x", tc.base, tc.metrics)); got != tc.want {
			t.Errorf("%s %q: %q, want %q", tc.base, tc.metrics, got, tc.want)
		}
	}
}

// A server's capacity is learned while requests wait there, moves the queue estimate with
// the node's own dispatches, and is forgotten after SlotsFor.
func TestSlotsLearned(t *testing.T) {
	var r Route
	at := int64(time.Hour)
	for range 6 {
		r.Start(at)
	}
	r.SetServer(Report{Waiting: 2, Running: 4}, at, 0)
	fresh := time.Hour
	v := r.View(at, fresh)
	if !v.SlotsKnown() || v.Excess != 2 || v.Queue != 2 {
		t.Fatalf("learned: %+v", v)
	}
	r.Done()
	r.Done()
	r.Done()
	if v := r.View(at, fresh); v.Excess != -1 || v.Queue != 0 {
		t.Fatalf("three done: %+v, want one slot free", v)
	}
	if v := r.View(at+int64(SlotsFor)+1, fresh); v.SlotsKnown() {
		t.Fatalf("capacity still trusted after SlotsFor: %+v", v)
	}
	// Running full at the known capacity keeps it trusted: a long burst held at the node
	// (no queue at the server) does not make it forget.
	later := at + int64(SlotsFor) - 1
	r.SetServer(Report{Waiting: 0, Running: 4}, later, 3)
	if v := r.View(later+int64(SlotsFor)-1, 2*time.Hour); !v.SlotsKnown() || v.Slots != 4 {
		t.Fatalf("capacity forgotten while the server ran full: %+v", v)
	}
	r.SetServer(Report{Waiting: 0, Running: 3}, later+int64(SlotsFor), 3)
	if v := r.View(later+2*int64(SlotsFor), 3*time.Hour); v.SlotsKnown() {
		t.Fatalf("capacity still trusted SlotsFor after the server last ran full: %+v", v)
	}
	// Running alone (no queue) teaches nothing: a replica that ran one request is not full.
	var idle Route
	idle.SetServer(Report{Running: 1}, at, 0)
	if v := idle.View(at, fresh); v.SlotsKnown() {
		t.Fatalf("capacity from an unqueued report: %+v", v)
	}
}

// TestFleetSeed: a capacity seeded from the fleet bounds a route that has no report of its
// own (this node's in-flight count against it), gives way to the node's own report, is
// never reported back as learned, and expires after SlotsFor.
func TestFleetSeed(t *testing.T) {
	g := NewRegistry()
	r := g.For(route("a", "http://h:1/v1", ""))
	now := int64(time.Hour)
	if v := r.View(now, g.FreshFor); v.SlotsKnown() || v.Fresh != 0 {
		t.Fatalf("unseeded: %+v", v)
	}
	g.SeedSlots(map[string]int64{"a": 4, "other": 9}, now)
	for range 6 {
		r.Start(now)
	}
	v := r.View(now, g.FreshFor)
	if v.Slots != 4 || v.Fresh != 1 || v.Excess != 2 || v.Queue != 2 {
		t.Fatalf("seeded with 6 in flight: %+v", v)
	}
	if got := g.LearnedSlots(now); len(got) != 0 {
		t.Fatalf("a seeded capacity reported as learned: %v", got)
	}
	// The node's own report wins: the server runs 3 with 2 waiting (capacity 3).
	r.SetServer(Report{Waiting: 2, Running: 3, KV: -1}, now, 6)
	if v := r.View(now, g.FreshFor); v.Slots != 3 {
		t.Fatalf("own report: %+v", v)
	}
	if got := g.LearnedSlots(now); got["a"] != 3 {
		t.Fatalf("learned %v, want a: 3", got)
	}
	// Both expire: the report fades, the seed is older than SlotsFor.
	later := now + int64(SlotsFor) + 1
	if v := r.View(later, g.FreshFor); v.SlotsKnown() || v.Fresh != 0 {
		t.Fatalf("after SlotsFor: %+v", v)
	}
	if got := g.LearnedSlots(later); len(got) != 0 {
		t.Fatalf("learned after SlotsFor: %v", got)
	}
}

func TestRegistryRetainForgetsGoneReplicas(t *testing.T) {
	g := NewRegistry()
	for _, id := range []string{"plain", "v@10.0.0.5:8000", "v@10.0.0.6:8000"} {
		g.For(&index.Route{Route: snapshot.Route{ID: id, BaseURL: "http://x/v1"}})
	}
	g.Retain(func(id, _ string) bool { return id == "v@10.0.0.6:8000" })
	var got []string
	g.Each(func(r *Route) { got = append(got, r.ID) })
	slices.Sort(got)
	if !slices.Equal(got, []string{"plain", "v@10.0.0.6:8000"}) {
		t.Fatalf("routes after Retain %v", got)
	}
}
