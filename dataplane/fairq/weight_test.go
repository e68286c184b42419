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
