package routing

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/loadstat"
)

// tenantKeys returns the first batch of n tenants' keys (in batches of n) whose
// rendezvous order alone gives one of four equal routes at least heavy first homes.
func tenantKeys(t *testing.T, n, heavy int) []uint64 {
	t.Helper()
	cands := fourRoutes()
	rz := &Selector{Loads: loadstat.NewRegistry()}
	for batch := range 1000 {
		keys := make([]uint64, n)
		first := map[string]int{}
		for i := range keys {
			keys[i], _ = PrefixKey("m", fmt.Sprintf("acct_%d_%d", batch, i), nil, []byte("system prompt"))
			ids, _ := order(rz, cands, Request{Key: keys[i], HasKey: true, Mode: ModeAffinity, Now: t0})
			first[ids[0]]++
		}
		for _, c := range first {
			if c >= heavy {
				return keys
			}
		}
	}
	t.Fatalf("no batch of %d keys gives a route %d first homes", n, heavy)
	return nil
}

// New tenants' homes are bounded: sixteen tenants, each sending two requests, whose
// rendezvous order makes one of four replicas the first home of seven or more start on
// replicas holding at most five each (⌈1.25 × 16 / 4⌉), and a node that learned the first node's placements picks
// the same homes for the next tenant. Keys sent once (unique prompts) do not count.
func TestHomesBounded(t *testing.T) {
	keys := tenantKeys(t, 17, 7)
	s := &Selector{Loads: loadstat.NewRegistry()}
	cands := fourRoutes()
	first := map[string]int{}
	now := t0
	for _, k := range keys[:16] {
		now += int64(100 * time.Millisecond)
		req := Request{Key: k, HasKey: true, PrefixBytes: FullAffinityBytes, Mode: ModeScored, Now: now}
		ids, d := order(s, cands, req)
		if d.Reason != ReasonAffinity {
			t.Fatalf("a new tenant went by %s, not to its first home", d.Reason)
		}
		first[ids[0]]++
		// Its second request reuses the key, which then counts at its home.
		req.Now += int64(time.Millisecond)
		if again, _ := order(s, cands, req); again[0] != ids[0] {
			t.Fatalf("a tenant's second request left its home %s for %s", ids[0], again[0])
		}
	}
	for id, n := range first {
		if n > 5 {
			t.Errorf("%s is the first home of %d of 16 tenants: %v", id, n, first)
		}
	}

	// A second node that learned the first's placements agrees on the next tenant's homes.
	b := &Selector{Loads: loadstat.NewRegistry()}
	b.Learn(s.Placements(0, 100), now)
	b.Learn(s.Placements(0, 100), now) // a second report of the keys: they are reused
	req := Request{Key: keys[16], HasKey: true, PrefixBytes: FullAffinityBytes, Mode: ModeScored, Now: now + int64(2*time.Second)}
	oa, _ := order(s, cands, req)
	ob, _ := order(b, fourRoutes(), req)
	if !slices.Equal(oa, ob) {
		t.Fatalf("after learning, node a orders %v and node b %v", oa, ob)
	}
}

// A route's warm reused keys are counted when a key is sent a second time (at every
// route it was sent to), recounted from the table every second (forgetting those that
// went cold and those another key took the slot of), keys sent once are not counted, and
// a table full of routes leaves the rest uncounted.
func TestKeysCounted(t *testing.T) {
	var m sentTable
	a, b := tagOf(0xa0), tagOf(0xb0)
	m.recount(t0, time.Minute)
	m.mark(1, a, t0)
	m.mark(1, a, t0+1) // again: reused, one key at a
	m.mark(1, a, t0+2) // and again: still one
	m.mark(2, a, t0)
	m.mark(2, b, t0)             // reused: one key at a and one at b
	m.mark(3, b, t0)             // sent once: not counted
	m.mark(1+sentSlots, b, t0+2) // takes key 1's slot over, sent once
	if !m.counted(2) || m.counted(3) || m.counted(1) || m.counted(1+sentSlots) {
		t.Error("counted: want key 2 only")
	}
	for _, tc := range []struct {
		name string
		at   int64
		tag  uint32
		want int
	}{
		{"a before a recount", t0 + 10, a, 2},
		{"b before a recount", t0 + 10, b, 1},
		{"a recounted", t0 + recountEvery, a, 1},
		{"b recounted", t0 + recountEvery, b, 1},
		{"a gone cold", t0 + 2*int64(time.Minute), a, 0},
	} {
		m.recount(tc.at, time.Minute)
		if got := m.keysAt(tc.tag); got != tc.want {
			t.Errorf("%s: %d keys, want %d", tc.name, got, tc.want)
		}
	}

	var c keyCounts
	for i := range uint32(countSlots + 1) {
		c.add(tagOf(uint64(i) << 1))
	}
	if got := c.get(tagOf(uint64(countSlots) << 1)); got != 0 {
		t.Errorf("a route beyond the table's room counted %d", got)
	}
	if got := c.get(tagOf(2)); got != 1 {
		t.Errorf("a route in the table counted %d, want 1", got)
	}
}

// One tenant's key counted on one of two replicas leaves new keys to their own
// rendezvous order: the slack keeps a count of one from pushing every new key away.
func TestHomesSlackForFewKeys(t *testing.T) {
	s := &Selector{Loads: loadstat.NewRegistry()}
	cands := []index.Candidate{cand("r1", 0, 1), cand("r2", 0, 1)}
	tenant, _ := PrefixKey("m", "acct", nil, []byte("a tenant's system prompt"))
	req := Request{Key: tenant, HasKey: true, PrefixBytes: FullAffinityBytes, Mode: ModeScored, Now: t0}
	order(s, cands, req)
	order(s, cands, req) // reused: counted at its home
	first := map[string]int{}
	for k := range 40 {
		key, _ := PrefixKey("m", "acct", nil, []byte(fmt.Sprintf("a one-off prompt %d", k)))
		ids, _ := order(s, cands, Request{Key: key, HasKey: true, PrefixBytes: 64, Mode: ModeScored, Now: t0 + 1})
		first[ids[0]]++
	}
	if first["r1"] == 0 || first["r2"] == 0 {
		t.Fatalf("one-off prompts' first routes %v: want both", first)
	}
}

// A route of weight zero is never a home.
func TestHomesSkipZeroWeight(t *testing.T) {
	cands := []index.Candidate{cand("r1", 0, 0), cand("r2", 0, 1), cand("r3", 0, 1)}
	s := &Selector{Loads: loadstat.NewRegistry()}
	for k := range 20 {
		key, _ := PrefixKey("m", fmt.Sprint(k), nil, []byte("p"))
		ids, _ := order(s, cands, Request{Key: key, HasKey: true, PrefixBytes: FullAffinityBytes, Mode: ModeScored, Now: t0})
		if ids[0] == "r1" {
			t.Fatalf("key %d started on a route of weight zero: %v", k, ids)
		}
	}
}

// BenchmarkRecount is the once-a-second recount over a full table (the request that
// does it pays this once).
func BenchmarkRecount(b *testing.B) {
	var m sentTable
	for k := range uint64(sentSlots) {
		m.mark(k, tagOf(k%4<<8), t0)
		m.mark(k, tagOf(k%4<<8), t0+1)
	}
	now := t0
	for b.Loop() {
		now += recountEvery
		m.recount(now, time.Hour)
	}
}
