package limits

import (
	"slices"
	"testing"
	"time"

	"github.com/sekgate/gateway/shared/snapshot"
)

func TestEffectiveShare(t *testing.T) {
	cases := []struct {
		share float64
		in    snapshot.Limits
		want  snapshot.Limits
	}{
		{1, *lim(10, 20, 4), *lim(10, 20, 4)},
		{0.5, *lim(10, 20, 4), *lim(5, 10, 2)},
		{0.25, *lim(10, 0, 0), *lim(2.5, 3, 0)}, // burst: a second's rate, then the share
		{0.1, *lim(10, 10, 10), *lim(1, 1, 1)},
		{0.01, *lim(10, 10, 10), *lim(0.1, 1, 1)}, // never below 1
		{0.7, *lim(10, 10, 3), *lim(7, 7, 3)},     // 2.1 rounded up
		{0.2, *lim(5, 5, 5), *lim(1, 1, 1)},       // 5·0.2 is 1, not rounded up to 2
	}
	for _, c := range cases {
		if got := EffectiveShare(c.in, c.share); got != c.want {
			t.Errorf("share %v of %+v: %+v, want %+v", c.share, c.in, got, c.want)
		}
	}
}

// TestSetSharesReconfigures: new shares re-configure an entry in place: the rate follows
// at once, a bucket keeps its state (an emptied bucket does not refill by a share change),
// concurrency slots held stay held, and entries the shares do not list take the default.
func TestSetSharesReconfigures(t *testing.T) {
	c := newClock()
	l := New(Config{ShareNodes: 2, Now: c.now})
	acct := lim(10, 10, 4)
	admit := func(acctID string, n int) (ok int) {
		for range n {
			if tk, d := l.Acquire("k", nil, acctID, acct, nil); d.Reason == OK {
				ok++
				tk.Release()
			}
		}
		return ok
	}
	if got := admit("a", 20); got != 5 { // 1/2 of a burst of 10
		t.Fatalf("at 1/2: %d admitted, want 5", got)
	}
	l.SetShares(Shares{Default: 0.5, Accounts: map[string]float64{"a": 0.8, "b": 0.1}})
	if got := admit("a", 20); got != 0 {
		t.Fatalf("an empty bucket refilled by a share change: %d admitted", got)
	}
	c.step(time.Second) // 8 tokens at 8/s, up to the new burst of 8
	if got := admit("a", 20); got != 8 {
		t.Fatalf("after 1 s at 0.8: %d admitted, want 8", got)
	}
	if got := admit("b", 20); got != 1 {
		t.Fatalf("b at 0.1 of a burst of 10: %d admitted, want 1", got)
	}
	if got := admit("c", 20); got != 5 {
		t.Fatalf("c, unlisted, at the default 1/2: %d admitted, want 5", got)
	}
	// Concurrency: 4 at share 1 (held), then the share drops to 1/4: no new slot until
	// the held ones end.
	l.SetShares(Shares{Default: 1})
	c.step(10 * time.Second)
	var held []Ticket
	for range 4 {
		tk, d := l.Acquire("k", nil, "a", acct, nil)
		if d.Reason != OK {
			t.Fatalf("slot refused at share 1: %+v", d)
		}
		held = append(held, tk)
	}
	l.SetShares(Shares{Default: 0.25})
	if _, d := l.Acquire("k", nil, "a", acct, nil); d.Reason != Concurrency {
		t.Fatalf("at 1/4 with 4 held: %+v, want a concurrency refusal", d)
	}
	for _, tk := range held {
		tk.Release()
	}
	if _, d := l.Acquire("k", nil, "a", acct, nil); d.Reason != OK {
		t.Fatalf("at 1/4 with none held: %+v", d)
	}
}

func TestSetSharesClamps(t *testing.T) {
	l := New(Config{ShareNodes: 4})
	l.SetShares(Shares{Default: 0, Accounts: map[string]float64{"big": 3, "neg": -1}})
	for _, c := range []struct {
		id   string
		want float64
	}{{"big", 1}, {"neg", 0.25}, {"other", 0.25}} {
		if got := l.shareOf(&entry{id: c.id, account: true}); got != c.want {
			t.Errorf("%s: share %v, want %v", c.id, got, c.want)
		}
	}
	if got := New(Config{ShareNodes: 3}).Effective(*lim(0, 0, 9)); got.MaxConcurrent != 3 {
		t.Errorf("before any shares: %+v, want 1/3", got)
	}
}

// TestDemand: attempts (admitted and refused) per limited entry since the last call, and
// in-flight counts; unlimited and idle entries are left out.
func TestDemand(t *testing.T) {
	c := newClock()
	l := New(Config{Now: c.now, DefaultMaxConcurrent: -1})
	var held []Ticket
	for range 5 {
		if tk, d := l.Acquire("k1", lim(0, 0, 2), "a1", lim(1, 3, 0), nil); d.Reason == OK {
			held = append(held, tk)
		}
	}
	l.Acquire("k2", nil, "free", &snapshot.Limits{}, nil)
	keys, accts := l.Demand()
	// k1: 5 attempts, 2 admitted (concurrency 2); a1 saw the 2 the key let through.
	if want := []Demand{{ID: "k1", Attempts: 5, InFlight: 2}}; !slices.Equal(keys, want) {
		t.Errorf("keys %+v, want %+v", keys, want)
	}
	if want := []Demand{{ID: "a1", Attempts: 2, InFlight: 2}}; !slices.Equal(accts, want) {
		t.Errorf("accounts %+v, want %+v", accts, want)
	}
	for _, tk := range held {
		tk.Release()
	}
	if keys, accts := l.Demand(); len(keys)+len(accts) != 0 {
		t.Errorf("idle entries reported: %+v %+v", keys, accts)
	}
}
