package fairq

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// While both have requests waiting, an account of weight 3 is let go three times for each
// time a weight-1 account is: counted over whole rounds, no timing involved.
func TestWeightThreeToOne(t *testing.T) {
	q := New(Config{MaxWait: time.Minute})
	var open atomic.Bool // routes full while the requests queue
	ready := roomIf(&open)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	granted := make(chan string, 64)
	add := func(acct string, weight int) {
		n := q.len()
		go func() {
			if _, err := q.Wait(ctx, q.Flow(acct, weight), "standard", ready); err == nil {
				granted <- acct
			}
		}()
		waitLen(t, q, n+1)
	}
	for range 20 {
		add("heavy", 3)
	}
	for range 20 {
		add("light", 1)
	}
	open.Store(true)
	counts := map[string]int{}
	const rounds = 5 // each round: 3 of heavy, 1 of light
	for range rounds * 4 {
		if !q.Kick() {
			t.Fatal("nothing let go")
		}
		counts[<-granted]++
	}
	if counts["heavy"] != 3*rounds || counts["light"] != rounds {
		t.Fatalf("grants %v, want heavy %d and light %d", counts, 3*rounds, rounds)
	}
}

// An account is above its share only when it holds more than its weight's part of the
// servers' slots: one at its share exactly (a whole number of slots) may start one more.
func TestAboveShareIsMoreThanShare(t *testing.T) {
	const capacity = 16
	for _, tc := range []struct {
		name     string
		accounts int // of weight 1, all active
		weight   int // the account judged
		inFlight int
		heavy    bool
	}{
		{"below a share of 4", 4, 1, 3, false},
		{"at a share of 4", 4, 1, 4, false},
		{"above a share of 4", 4, 1, 5, true},
		{"at a share of 5⅓, rounded down", 3, 1, 5, false},
		{"above a share of 5⅓", 3, 1, 6, true},
		{"weight 2 of 5: share 6.4", 4, 2, 6, false},
		{"weight 2 of 5: above", 4, 2, 7, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
			q := New(Config{Now: func() time.Time { return now }})
			f := q.Flow("judged", tc.weight)
			for i := 1; i < tc.accounts; i++ {
				q.Flow(string(rune('a'+i)), 1)
			}
			for range tc.inFlight {
				f.Start()
			}
			q.refresh(now)
			if got := f.heavy(capacity); got != tc.heavy {
				t.Fatalf("%d in flight: heavy %v, want %v", tc.inFlight, got, tc.heavy)
			}
		})
	}
}
