package routing

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/loadstat"
)

func fourRoutes() []index.Candidate {
	return []index.Candidate{cand("r1", 0, 1), cand("r2", 0, 1), cand("r3", 0, 1), cand("r4", 0, 1), cand("backup", 1, 1)}
}

func order(s *Selector, cands []index.Candidate, req Request) ([]string, Decision) {
	plan, d := s.Order(nil, cands, req)
	ids := make([]string, len(plan))
	for i, c := range plan {
		ids[i] = c.Route.ID
	}
	return ids, d
}

var t0 = time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC).UnixNano()

// Two nodes (separate selectors, registries and route objects) order a key's routes alike.
func TestAffinityAgreesAcrossNodes(t *testing.T) {
	for _, mode := range []Mode{ModeScored, ModeAffinity, ModeLeastLoad} {
		a := &Selector{Loads: loadstat.NewRegistry()}
		b := &Selector{Loads: loadstat.NewRegistry()}
		ca, cb := fourRoutes(), fourRoutes()
		for k := range 50 {
			key, _ := PrefixKey("m", "", nil, []byte(fmt.Sprintf("tenant-%d system prompt", k)))
			req := Request{Key: key, HasKey: true, Mode: mode, Now: t0}
			oa, _ := order(a, ca, req)
			ob, _ := order(b, cb, req)
			if fmt.Sprint(oa) != fmt.Sprint(ob) {
				t.Fatalf("%v key %d: node a %v, node b %v", mode, k, oa, ob)
			}
			if oa[4] != "backup" {
				t.Fatalf("%v: lower priority route not last: %v", mode, oa)
			}
		}
	}
}

// Rendezvous shares keys among routes in proportion to their weights.
func TestRendezvousHonoursWeights(t *testing.T) {
	s := &Selector{Loads: loadstat.NewRegistry()}
	cands := []index.Candidate{cand("a", 0, 1), cand("b", 0, 3), cand("zero", 0, 0)}
	counts := map[string]int{}
	for k := range 8000 {
		key, _ := PrefixKey("m", "", []byte(fmt.Sprint(k)), nil)
		ids, _ := order(s, cands, Request{Key: key, HasKey: true, Mode: ModeAffinity, Now: t0})
		counts[ids[0]]++
		if ids[2] != "zero" {
			t.Fatalf("weight-0 route not last: %v", ids)
		}
	}
	if r := float64(counts["b"]) / float64(counts["a"]); r < 2.6 || r > 3.4 {
		t.Fatalf("shares %v: b/a = %.2f, want about 3", counts, r)
	}
}

func loadUp(s *Selector, c index.Candidate, n int) {
	for range n {
		s.Loads.For(c.Route).Start(t0)
	}
}

// Affinity with bounded load passes over a preferred replica that is far above average.
func TestAffinityBoundedLoad(t *testing.T) {
	s := &Selector{Loads: loadstat.NewRegistry()}
	cands := fourRoutes()
	key, _ := PrefixKey("m", "", nil, []byte("system"))
	req := Request{Key: key, HasKey: true, Mode: ModeAffinity, Now: t0}
	ids, d := order(s, cands, req)
	if d.Reason != ReasonAffinity {
		t.Fatalf("idle: reason %q", d.Reason)
	}
	preferred := ids[0]
	var pc index.Candidate
	for _, c := range cands {
		if c.Route.ID == preferred {
			pc = c
		}
	}
	loadUp(s, pc, 2) // average with the request (3/4) rounds up to 1: 2+1 > 1.25
	ids2, d2 := order(s, cands, req)
	if ids2[0] == preferred || d2.Reason != ReasonLoad || ids2[0] != ids[1] {
		t.Fatalf("loaded preferred %s: got %v (%s), want the next in key order %s", preferred, ids2, d2.Reason, ids[1])
	}
}

// The scored policy sends a new key to the first of its homes, keeps a key on a replica
// that holds its prefix against small load differences, spills to the second home for
// larger ones, and lets a held request go where a slot is free.
func TestScoredAffinityAgainstLoad(t *testing.T) {
	s := &Selector{Loads: loadstat.NewRegistry()}
	cands := fourRoutes()
	key, _ := PrefixKey("m", "", nil, []byte("tenant system prompt"))
	req := Request{Key: key, HasKey: true, PrefixBytes: FullAffinityBytes, Mode: ModeScored, Now: t0}
	rz, _ := order(&Selector{Loads: loadstat.NewRegistry()}, cands, Request{Key: key, HasKey: true, Mode: ModeAffinity, Now: t0})
	ids, d := order(s, cands, req)
	if ids[0] != rz[0] || d.Reason != ReasonAffinity {
		t.Fatalf("new key: %v (%s), want its first home %s", ids, d.Reason, rz[0])
	}
	byID := map[string]index.Candidate{}
	for _, c := range cands {
		byID[c.Route.ID] = c
	}
	loadUp(s, byID[ids[0]], 2)
	again, d := order(s, cands, req)
	if again[0] != ids[0] || d.Reason != ReasonAffinity || d.InFlight != 2 {
		t.Fatalf("prefix held, 2 ahead: %v %+v", again, d)
	}
	loadUp(s, byID[ids[0]], 6)
	moved, d := order(s, cands, req)
	if moved[0] != rz[1] || d.Reason != ReasonLoad {
		t.Fatalf("first home 8 ahead: %v %+v, want the second home %s", moved, d, rz[1])
	}
	// Both homes hold the prefix now: the less loaded one takes it.
	loadUp(s, byID[rz[1]], 3)
	if both, d := order(s, cands, req); both[0] != rz[1] || d.Reason != ReasonAffinity {
		t.Fatalf("both homes warm, second less loaded: %v %+v", both, d)
	}
	// A fresh server report of a long queue moves it too.
	s2 := &Selector{Loads: loadstat.NewRegistry()}
	order(s2, cands, req)
	s2.Loads.For(byID[ids[0]].Route).SetServer(loadstat.Report{Waiting: 3, Running: 4, KV: 0.5}, t0, 0)
	moved2, d2 := order(s2, cands, req)
	if moved2[0] == ids[0] {
		t.Fatalf("server queue 3 ignored: %v", moved2)
	}
	if d2.Waiting != -1 {
		t.Fatalf("waiting seen at the chosen route %d, want -1 (no report)", d2.Waiting)
	}
	// The report fades: far later it no longer counts.
	late := req
	late.Now = t0 + int64(10*time.Second)
	if back, _ := order(s2, cands, late); back[0] != ids[0] {
		t.Fatalf("stale report still counted: %v", back)
	}
	// A held request skips a home without a free slot.
	s3 := &Selector{Loads: loadstat.NewRegistry()}
	order(s3, cands, req)
	s3.Loads.For(byID[ids[0]].Route).SetServer(loadstat.Report{Waiting: 1, Running: 4}, t0, 0)
	s3.Loads.For(byID[ids[0]].Route).SetServer(loadstat.Report{Waiting: 0, Running: 4}, t0, 0)
	held := req
	held.Held = true
	if h, _ := order(s3, cands, held); h[0] == ids[0] {
		t.Fatalf("held request sent to a full replica: %v", h)
	}
	// A request of an account above its share leaves a server's last free slot to the
	// others; a light account's request takes it. The prefix is the request's size in
	// FullAffinityBytes: a long one held at its home outweighs the last slot, since its
	// second home would prefill it in full.
	for _, tc := range []struct {
		prefix         float64
		slots, running int64
		heavy, home    bool
	}{
		{0.625, 4, 3, false, true},
		{0.625, 4, 3, true, false},
		{0.625, 4, 2, true, true},   // two free: one for it, one kept
		{0.625, 1, 0, true, true},   // a server of one slot keeps none
		{0.625, 4, 4, false, false}, // none free: a light one spills too
		{1, 4, 3, true, true},       // a long prefix held there
	} {
		s4 := &Selector{Loads: loadstat.NewRegistry()}
		order(s4, cands, req)
		r := s4.Loads.For(byID[ids[0]].Route)
		r.SetServer(loadstat.Report{Waiting: 1, Running: tc.slots}, t0, 0) // capacity learned
		r.SetServer(loadstat.Report{Running: tc.running}, t0, 0)
		hv := req
		hv.Heavy, hv.PrefixBytes = tc.heavy, int(tc.prefix*FullAffinityBytes)
		if h, _ := order(s4, cands, hv); (h[0] == ids[0]) != tc.home {
			t.Errorf("prefix %v, %d of %d running, heavy %v: %v first, want the home %v", tc.prefix, tc.running, tc.slots, tc.heavy, h[0], tc.home)
		}
	}
}

// Least load ignores the key.
func TestLeastLoad(t *testing.T) {
	s := &Selector{Loads: loadstat.NewRegistry()}
	cands := fourRoutes()
	loadUp(s, cands[0], 3)
	loadUp(s, cands[1], 1)
	loadUp(s, cands[3], 2)
	ids, d := order(s, cands, Request{Mode: ModeLeastLoad, Now: t0})
	if ids[0] != "r3" || ids[1] != "r2" || ids[2] != "r4" || ids[3] != "r1" || d.Reason != ReasonLoad {
		t.Fatalf("least load order %v (%s)", ids, d.Reason)
	}
}

func TestModeOf(t *testing.T) {
	for name, want := range map[string]Mode{"": ModeScored, "scored": ModeScored, "weighted": ModeWeighted,
		"least_load": ModeLeastLoad, "affinity": ModeAffinity, "future": ModeScored} {
		if got := ModeOf(name); got != want {
			t.Errorf("ModeOf(%q) = %v, want %v", name, got, want)
		}
	}
}

func benchSetup() (*Selector, []index.Candidate, []byte) {
	s := &Selector{Loads: loadstat.NewRegistry()}
	cands := fourRoutes()
	prefix := make([]byte, 4096)
	for i := range prefix {
		prefix[i] = byte('a' + i%26)
	}
	return s, cands, prefix
}

// The routing decision (prefix key over a full 4 KiB prefix, then ordering) allocates
// nothing.
func TestOrderAllocatesNothing(t *testing.T) {
	s, cands, prefix := benchSetup()
	var dst [8]index.Candidate
	for _, mode := range []Mode{ModeScored, ModeAffinity, ModeLeastLoad, ModeWeighted} {
		allocs := testing.AllocsPerRun(200, func() {
			key, ok := PrefixKey("model", "acct_0123456789ab", nil, prefix)
			s.Order(dst[:0], cands, Request{Key: key, HasKey: ok, PrefixBytes: len(prefix), Mode: mode, Now: t0})
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per decision", mode, allocs)
		}
	}
}

func BenchmarkDecision(b *testing.B) {
	s, cands, prefix := benchSetup()
	var dst [8]index.Candidate
	b.ReportAllocs()
	for b.Loop() {
		key, ok := PrefixKey("model", "", nil, prefix)
		s.Order(dst[:0], cands, Request{Key: key, HasKey: ok, PrefixBytes: len(prefix), Mode: ModeScored, Now: t0})
	}
}

// A short prefix earns little affinity: a small load difference moves it.
func TestScoredShortPrefixGoesByLoad(t *testing.T) {
	s := &Selector{Loads: loadstat.NewRegistry()}
	cands := fourRoutes()
	key, _ := PrefixKey("m", "", nil, []byte(`{"role":"user","content":"Hej"}`))
	req := Request{Key: key, HasKey: true, PrefixBytes: 31, Mode: ModeScored, Now: t0}
	ids, _ := order(s, cands, req)
	for _, c := range cands {
		if c.Route.ID == ids[0] {
			loadUp(s, c, 1)
		}
	}
	if again, _ := order(s, cands, req); again[0] == ids[0] {
		t.Fatalf("short prefix kept on a busier replica: %v", again)
	}
}

// A key no node has placed goes to its first home even when that home runs a request more
// than the second (every node then agrees on it), and spills only as a held prefix would.
func TestScoredNewKeyTakesFirstHome(t *testing.T) {
	cands := fourRoutes()
	key, _ := PrefixKey("m", "", nil, []byte("a new tenant's system prompt"))
	req := Request{Key: key, HasKey: true, PrefixBytes: FullAffinityBytes, Mode: ModeScored, Now: t0}
	rz, _ := order(&Selector{Loads: loadstat.NewRegistry()}, cands, Request{Key: key, HasKey: true, Mode: ModeAffinity, Now: t0})
	byID := map[string]index.Candidate{}
	for _, c := range cands {
		byID[c.Route.ID] = c
	}
	for _, n := range []int{1, 2, 3} {
		s := &Selector{Loads: loadstat.NewRegistry()}
		loadUp(s, byID[rz[0]], n)
		if ids, d := order(s, cands, req); ids[0] != rz[0] || d.Reason != ReasonAffinity {
			t.Fatalf("first home %d ahead: %v (%s), want it: %s", n, ids, d.Reason, rz[0])
		}
	}
}

// Room counts this node's part of the free slots when the fleet has several nodes.
func TestRoomSharedByNodes(t *testing.T) {
	cands := fourRoutes()[:1]
	s := &Selector{Loads: loadstat.NewRegistry()}
	r := s.Loads.For(cands[0].Route)
	r.SetServer(loadstat.Report{Waiting: 2, Running: 6, KV: -1}, t0, 0) // capacity 6 learned
	r.SetServer(loadstat.Report{Waiting: 0, Running: 3, KV: -1}, t0, 0) // 3 free
	a := s.Room(cands, t0)
	alone, spare, capacity := a.Free, a.Spare, a.Capacity
	nodes := 3
	s.Place = func() (int, int) { return nodes, 0 }
	sh := s.Room(cands, t0)
	shared, spareShared := sh.Free, sh.Spare
	if sh.Reported != 3 || sh.Started != 0 {
		t.Fatalf("reported %+v, want 3 free, none started since", sh)
	}
	if capacity != 6 || alone != 3 || shared != 1 {
		t.Fatalf("room alone %v, shared by 3 nodes %v (capacity %v), want 3 and 1 of 6", alone, shared, capacity)
	}
	// Beyond the server's last free slot: 2 of the 3, a third of them this node's.
	if spare != 2 || math.Abs(spareShared-2.0/3) > 1e-9 {
		t.Fatalf("spare alone %v, shared by 3 nodes %v; want 2 and 2/3", spare, spareShared)
	}
	// A request this node starts comes out of its own part, whole; one it ends frees a
	// slot any node may take: a third of it is this node's.
	for _, tc := range []struct {
		started       int
		alone, shared float64
	}{{1, 2, 0}, {-1, 4, 4.0 / 3}, {0, 3, 1}} {
		nodes = 1
		r := s.Loads.For(cands[0].Route)
		r.SetServer(loadstat.Report{Waiting: 0, Running: 3, KV: -1}, t0, 1)
		for range tc.started + 1 {
			r.Start(t0)
		}
		alone := s.Room(cands, t0).Free
		nodes = 3
		sh := s.Room(cands, t0)
		if alone != tc.alone || math.Abs(sh.Free-tc.shared) > 1e-9 {
			t.Fatalf("%+d since the report: room alone %v, shared %v; want %v, %v", tc.started, alone, sh.Free, tc.alone, tc.shared)
		}
		// The reports' own counts do not move; the node's starts since are counted apart.
		if sh.Reported != 3 || sh.Started != float64(max(tc.started, 0)) {
			t.Fatalf("%+d since the report: reported %v, started %v; want 3, %d", tc.started, sh.Reported, sh.Started, max(tc.started, 0))
		}
		for range tc.started + 1 {
			r.Done()
		}
	}
}

// A node that hears the other nodes' starts as they happen (Alone) takes what the report
// showed free less every node's starts since, whole, and takes no turns.
func TestRoomAloneWithTheFleetsStarts(t *testing.T) {
	cands := fourRoutes()[:1]
	alone := true
	s := &Selector{Loads: loadstat.NewRegistry(), Place: func() (int, int) { return 3, 2 }, Alone: func() bool { return alone }}
	r := s.Loads.For(cands[0].Route)
	r.SetServer(loadstat.Report{Waiting: 2, Running: 6, KV: -1}, t0, 0) // capacity 6 learned
	r.SetServer(loadstat.Report{Waiting: 0, Running: 2, KV: -1}, t0, 0) // 4 free
	r.Start(t0)                                                         // this node's
	s.Loads.Heard(r.IDHash, 1)                                          // another node's
	sp := s.Room(cands, t0)
	if sp.Free != 2 || sp.Spare != 1 || sp.Split != 1 || !math.IsNaN(sp.SpareTurns) {
		t.Fatalf("alone: %+v, want 2 free, 1 spare, whole, no turns", sp)
	}
	// Not alone, it splits the report (4 free) with the others and counts only its own
	// start against its part: 4/3 - 1.
	alone = false
	sp = s.Room(cands, t0)
	if sp.Split != 3 || math.IsNaN(sp.SpareTurns) || math.Abs(sp.Free-1.0/3) > 1e-9 || sp.Started != 1 {
		t.Fatalf("not alone: %+v, want a third of 4 less its own start, on turns", sp)
	}
}
