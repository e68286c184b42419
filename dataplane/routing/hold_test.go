package routing

import (
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/loadstat"
)

// A tenant whose home holds its prefix stays there while the wait for a slot is shorter
// than a prefill of the prefix elsewhere, once the server's pace is learned; before that,
// or when prefills are quick against a request's turn, the size bonus alone decides.
func TestHoldBonusWeighsPrefillAgainstWait(t *testing.T) {
	cands := fourRoutes()
	byID := map[string]index.Candidate{}
	for _, c := range cands {
		byID[c.Route.ID] = c
	}
	key, _ := PrefixKey("m", "", nil, []byte("tenant system prompt"))
	// 1,200 tokens of 4 bytes: the size bonus is 4 × 4800/8192 = 2.3.
	req := Request{Key: key, HasKey: true, PrefixBytes: 4800, Mode: ModeScored, Now: t0}
	tests := []struct {
		name           string
		prefill, turn  time.Duration // the learned pace (0: none)
		slots, running int64         // the home's capacity learned and running now
		waiting        int64         // its queue
		gap            time.Duration // between the tenant's requests (0: this is its second)
		stays          bool
	}{
		// Full, nothing waiting: a slot frees within a turn over four (90 ms) against
		// a 720 ms prefill elsewhere.
		{"long prefill, full home", 600 * time.Microsecond, 350 * time.Millisecond, 4, 4, 0, 0, true},
		{"long prefill, two waiting", 600 * time.Microsecond, 350 * time.Millisecond, 4, 4, 2, 0, true},
		// A queue of eight turns (700 ms) and more: the prefill is the shorter.
		{"long prefill, long queue", 600 * time.Microsecond, 350 * time.Millisecond, 4, 4, 8, 0, false},
		{"no pace learned", 0, 0, 4, 4, 0, 0, false},
		// 1,200 tokens in 36 ms: a cache miss costs less than waiting for a slot.
		{"quick prefill", 30 * time.Microsecond, 350 * time.Millisecond, 4, 4, 0, 0, false},
		// One request a second: 0.7 arrive in a prefill, the waits weigh 1/1.7; it stays.
		{"a tenant's pace", 600 * time.Microsecond, 350 * time.Millisecond, 4, 4, 1, time.Second, true},
		// Ten requests a second: seven arrive in a prefill, and a spill serves them too.
		{"a hot tenant", 600 * time.Microsecond, 350 * time.Millisecond, 4, 4, 1, 100 * time.Millisecond, false},
		// Capacity not known: it is at least the four it runs.
		{"capacity unknown", 600 * time.Microsecond, 350 * time.Millisecond, 0, 4, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Selector{Loads: loadstat.NewRegistry()}
			home, _ := order(s, cands, req) // the key is placed at its first home
			r := s.Loads.For(byID[home[0]].Route)
			if tt.turn > 0 {
				for i, n := range []int64{100, 110} {
					f := float64(n - 100)
					r.SetServer(loadstat.Report{KV: -1, Timing: loadstat.Timing{Finished: n,
						PrefillSeconds: f * 1000 * tt.prefill.Seconds(), InferenceSeconds: f * tt.turn.Seconds(),
						QueriedTokens: int64(f) * 2000, CachedTokens: int64(f) * 1000}}, t0+int64(i), 0)
				}
			}
			if tt.slots > 0 {
				r.SetServer(loadstat.Report{Waiting: 1, Running: tt.slots, KV: -1}, t0, 0) // capacity learned
			}
			r.SetServer(loadstat.Report{Waiting: tt.waiting, Running: tt.running, KV: -1}, t0, 0)
			next := req
			if tt.gap > 0 { // the tenant's requests so far, at its home
				tag := tagOf(r.IDHash)
				for range 20 {
					next.Now += int64(tt.gap)
					s.sent.mark(key, tag, next.Now)
				}
				next.Now += int64(tt.gap)
				r.SetServer(loadstat.Report{Waiting: tt.waiting, Running: tt.running, KV: -1}, next.Now, 0)
			}
			got, _ := order(s, cands, next)
			if (got[0] == home[0]) != tt.stays {
				t.Fatalf("%v first (home %s), want the home: %v", got, home[0], tt.stays)
			}
		})
	}
}
