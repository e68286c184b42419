package routing

import (
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/loadstat"
)

// A reused key's request at one home asks for a copy to its other home only while that
// one lacks the prefix, has slots and cache to spare, and has no copy in flight.
func TestWarmHomes(t *testing.T) {
	idle := loadstat.Report{KV: 0.1, CacheTokens: 16 * 640}
	cases := []struct {
		name  string
		off   bool
		other loadstat.Report // the other home's report
		want  bool
	}{
		{"idle other home", false, idle, true},
		{"off", true, idle, false},
		{"cache size unknown", false, loadstat.Report{KV: 0.1}, false},
		{"cache too small for another prefix", false, loadstat.Report{KV: 0.1, CacheTokens: 1500}, false},
		{"requests waiting there", false, loadstat.Report{Waiting: 1, Running: 4, KV: 0.5, CacheTokens: 16 * 640}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &Selector{Loads: loadstat.NewRegistry(), WarmHomes: !tc.off}
			cands := []index.Candidate{cand("r1", 0, 1), cand("r2", 0, 1)}
			key, _ := PrefixKey("m", "acct_1", nil, []byte("system prompt"))
			req := Request{Key: key, HasKey: true, PrefixBytes: 4000, Mode: ModeScored, Now: t0}
			first, d := order(s, cands, req) // a new key: sent to its first home, not counted yet
			if d.HasWarm {
				t.Fatal("a key sent once asked for a copy")
			}
			home, other := byID(cands, first[0]), byID(cands, first[1])
			s.Loads.For(home.Route).SetServer(idle, t0, 0)
			s.Loads.For(other.Route).SetServer(tc.other, t0, 0)
			req.Now += int64(time.Millisecond)
			again, d := order(s, cands, req)
			if again[0] != first[0] {
				t.Fatalf("the second request went to %s, not its home %s", again[0], first[0])
			}
			if d.HasWarm != tc.want {
				t.Fatalf("copy asked: %v, want %v", d.HasWarm, tc.want)
			}
			if !d.HasWarm {
				return
			}
			if d.Warm.Cand.Route != other.Route || d.Warm.Key != key {
				t.Fatalf("copy of %x to %s, want %x to %s", d.Warm.Key, d.Warm.Cand.Route.ID, key, other.Route.ID)
			}
			// One copy per route in flight; a failed one frees the route and marks nothing.
			req.Now += int64(time.Millisecond)
			if _, d2 := order(s, cands, req); d2.HasWarm {
				t.Fatal("a second copy while one is in flight")
			}
			s.Warmed(d.Warm, false, req.Now)
			req.Now += int64(time.Millisecond)
			_, d3 := order(s, cands, req)
			if !d3.HasWarm {
				t.Fatal("no copy after a failed one")
			}
			// An answered copy marks the key at the other home: both hold it, no more copies.
			s.Warmed(d3.Warm, true, req.Now)
			if !s.sent.sentWithin(key, tagOf(s.Loads.For(other.Route).IDHash), req.Now, s.warmFor()) {
				t.Fatal("the answered copy did not mark the key at the other home")
			}
			req.Now += int64(time.Millisecond)
			if _, d4 := order(s, cands, req); d4.HasWarm {
				t.Fatal("a copy to a home that holds the prefix")
			}
			// A copy nobody used counts for copyFor; then the next request refreshes it.
			req.Now += int64(copyFor)
			if _, d5 := order(s, cands, req); !d5.HasWarm {
				t.Fatal("no fresh copy once the last one's copyFor passed")
			}
		})
	}
}

func byID(cands []index.Candidate, id string) index.Candidate {
	for _, c := range cands {
		if c.Route.ID == id {
			return c
		}
	}
	panic("no route " + id)
}

// In a fleet one node sends a route's copies: of two nodes that see the same requests,
// exactly one asks for the copy, and a node that does not know its place asks for none.
func TestWarmHomesOneNodePerRoute(t *testing.T) {
	idle := loadstat.Report{KV: 0.1, CacheTokens: 16 * 640}
	key, _ := PrefixKey("m", "acct_1", nil, []byte("system prompt"))
	asked := map[int]bool{}
	for _, rank := range []int{0, 1, 2} {
		s := &Selector{Loads: loadstat.NewRegistry(), WarmHomes: true, Place: func() (int, int) { return 2, rank }}
		cands := []index.Candidate{cand("r1", 0, 1), cand("r2", 0, 1)}
		for _, c := range cands {
			s.Loads.For(c.Route).SetServer(idle, t0, 0)
		}
		req := Request{Key: key, HasKey: true, PrefixBytes: 4000, Mode: ModeScored, Now: t0}
		order(s, cands, req)
		req.Now += int64(time.Millisecond)
		_, d := order(s, cands, req)
		asked[rank] = d.HasWarm
	}
	if asked[0] || asked[1] == asked[2] {
		t.Fatalf("copies asked by place (0: unknown): %v, want one of places 1 and 2", asked)
	}
}

// A tenant held at a replica that is not one of its homes (the homes' bounds moved them)
// moves to its first home by a copy, and its requests follow once the copy is answered.
func TestWarmHomesMovesATenantHome(t *testing.T) {
	idle := loadstat.Report{KV: 0.1, CacheTokens: 16 * 640}
	s := &Selector{Loads: loadstat.NewRegistry(), WarmHomes: true}
	cands := []index.Candidate{cand("r1", 0, 1), cand("r2", 0, 1), cand("r3", 0, 1)}
	for _, c := range cands {
		s.Loads.For(c.Route).SetServer(idle, t0, 0)
	}
	key, _ := PrefixKey("m", "acct_1", nil, []byte("system prompt"))
	rz, _ := order(&Selector{Loads: loadstat.NewRegistry()}, cands, Request{Key: key, HasKey: true, Mode: ModeAffinity, Now: t0})
	away := tagOf(s.Loads.For(byID(cands, rz[2]).Route).IDHash)
	s.sent.mark(key, away, t0) // sent twice to the third route in its order: held there, reused
	s.sent.mark(key, away, t0+int64(time.Millisecond))
	req := Request{Key: key, HasKey: true, PrefixBytes: 4000, Mode: ModeScored, Now: t0 + int64(2*time.Millisecond)}
	got, d := order(s, cands, req)
	if got[0] != rz[2] || !d.HasWarm || d.Warm.Cand.Route.ID != rz[0] {
		t.Fatalf("served at %s, copy %v to %s; want served at %s, a copy to its first home %s", got[0], d.HasWarm, d.Warm.Cand.Route.ID, rz[2], rz[0])
	}
	s.Warmed(d.Warm, true, req.Now)
	req.Now += int64(time.Millisecond)
	// Served at its home now; a copy, if any, warms its second home.
	if moved, d := order(s, cands, req); moved[0] != rz[0] || d.HasWarm && d.Warm.Cand.Route.ID != rz[1] {
		t.Fatalf("after the copy: served at %s (copy %v to %s), want its home %s", moved[0], d.HasWarm, d.Warm.Cand.Route.ID, rz[0])
	}
}
