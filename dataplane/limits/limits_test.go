package limits

import (
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/shared/snapshot"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time       { return c.t }
func (c *clock) step(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                { return &clock{t: time.Unix(1_800_000_000, 0)} }
func lim(rps float64, burst, conc int) *snapshot.Limits {
	return &snapshot.Limits{RequestsPerSecond: rps, Burst: burst, MaxConcurrent: conc}
}

// third is a run-time 1/3 (a share is a float64 product, not an exact constant quotient).
var third = 1.0 / 3

func TestEffective(t *testing.T) {
	cases := []struct {
		share int
		in    snapshot.Limits
		want  snapshot.Limits
	}{
		{1, snapshot.Limits{}, snapshot.Limits{}},
		{1, *lim(10, 20, 4), *lim(10, 20, 4)},
		{1, *lim(2.5, 0, 0), *lim(2.5, 3, 0)}, // burst defaults to a second's worth
		{2, *lim(10, 20, 4), *lim(5, 10, 2)},
		{3, *lim(10, 5, 5), *lim(10*third, 2, 2)}, // rounded up
		{4, *lim(1, 1, 1), *lim(0.25, 1, 1)},      // never below 1
	}
	for _, c := range cases {
		l := New(Config{ShareNodes: c.share})
		if got := l.Effective(c.in); got != c.want {
			t.Errorf("share %d of %+v: %+v, want %+v", c.share, c.in, got, c.want)
		}
	}
}

func TestRate(t *testing.T) {
	c := newClock()
	l := New(Config{Now: c.now})
	acct := lim(2, 4, 0)
	admitted := 0
	for range 10 {
		if _, d := l.Acquire("key_1", nil, "acct_1", acct, nil); d.Reason == OK {
			admitted++
		} else if d.Reason != Rate || d.Scope != ScopeAccount || d.RetryAfter <= 0 || d.RetryAfter > 500*time.Millisecond {
			t.Fatalf("denial %+v", d)
		}
	}
	if admitted != 4 {
		t.Fatalf("burst admitted %d, want 4", admitted)
	}
	c.step(time.Second) // two more tokens
	admitted = 0
	for range 5 {
		if _, d := l.Acquire("key_1", nil, "acct_1", acct, nil); d.Reason == OK {
			admitted++
		}
	}
	if admitted != 2 {
		t.Fatalf("after 1s admitted %d, want 2", admitted)
	}
}

func TestKeyAndDefaults(t *testing.T) {
	c := newClock()
	l := New(Config{Now: c.now})
	defaults := lim(0, 0, 2)
	// An account without limits of its own gets the defaults; a key without its own is
	// limited only through its account.
	t1, d := l.Acquire("key_a", nil, "acct_1", nil, defaults)
	t2, d2 := l.Acquire("key_a", nil, "acct_1", nil, defaults)
	if d.Reason != OK || d2.Reason != OK {
		t.Fatal("refused within the default concurrency")
	}
	if _, d := l.Acquire("key_a", nil, "acct_1", nil, defaults); d.Reason != Concurrency || d.Scope != ScopeAccount {
		t.Fatalf("third concurrent: %+v", d)
	}
	// Another key of the same account shares the account's slots.
	if _, d := l.Acquire("key_b", nil, "acct_1", nil, defaults); d.Reason != Concurrency || d.Scope != ScopeAccount {
		t.Fatalf("other key: %+v", d)
	}
	// An account whose own limits are higher than the defaults: its keys follow it.
	for range 5 {
		tk, d := l.Acquire("key_d", nil, "acct_3", lim(0, 0, 5), defaults)
		if d.Reason != OK {
			t.Fatalf("raised account limit not applied to its key: %+v", d)
		}
		defer tk.Release()
	}
	t1.Release()
	if t3, d := l.Acquire("key_b", nil, "acct_1", nil, defaults); d.Reason != OK {
		t.Fatalf("after release: %+v", d)
	} else {
		t3.Release()
	}
	t2.Release()
	// A key's own limits win over the defaults; nil defaults mean unlimited.
	for range 100 {
		tk, d := l.Acquire("key_c", lim(0, 0, 1000), "acct_2", nil, nil)
		if d.Reason != OK {
			t.Fatalf("%+v", d)
		}
		defer tk.Release()
	}
}

func TestReconfigureKeepsState(t *testing.T) {
	c := newClock()
	l := New(Config{Now: c.now})
	held, _ := l.Acquire("k", nil, "a", lim(0, 0, 1), nil)
	// The snapshot raises the limit: the request in flight still counts.
	if _, d := l.Acquire("k", nil, "a", lim(0, 0, 2), nil); d.Reason != OK {
		t.Fatalf("raised limit refused: %+v", d)
	}
	if _, d := l.Acquire("k", nil, "a", lim(0, 0, 2), nil); d.Reason != Concurrency {
		t.Fatalf("in-flight count lost across reconfiguration: %+v", d)
	}
	held.Release()
	// Rate change applies at once; the bucket keeps its (empty) level.
	for range 3 {
		l.Acquire("k2", nil, "a2", lim(1, 3, 0), nil)
	}
	if _, d := l.Acquire("k2", nil, "a2", lim(100, 3, 0), nil); d.Reason != Rate {
		t.Fatalf("bucket refilled by reconfiguration: %+v", d)
	}
	c.step(20 * time.Millisecond)
	if _, d := l.Acquire("k2", nil, "a2", lim(100, 3, 0), nil); d.Reason != OK {
		t.Fatalf("new rate not applied: %+v", d)
	}
	// Removing the limits makes the entry unlimited.
	for range 10 {
		if _, d := l.Acquire("k2", nil, "a2", &snapshot.Limits{}, nil); d.Reason != OK {
			t.Fatalf("unlimited refused: %+v", d)
		}
	}
}

// TestTwoNodesShare: two nodes each told they share the deployment with one other admit
// together about the configured rate, where unshared they admit twice as much.
func TestTwoNodesShare(t *testing.T) {
	acct := lim(20, 10, 0)
	run := func(share int) int {
		c := newClock()
		nodes := []*Limiter{New(Config{ShareNodes: share, Now: c.now}), New(Config{ShareNodes: share, Now: c.now})}
		admitted := 0
		// 100 requests a second for 3 s, alternating between the nodes (a round-robin balancer).
		for i := range 300 {
			if _, d := nodes[i%2].Acquire("key_1", nil, "acct_1", acct, nil); d.Reason == OK {
				admitted++
			}
			c.step(10 * time.Millisecond)
		}
		return admitted
	}
	want := 10 + 20*3 // burst + rate * 3 s
	if got := run(2); got < want-2 || got > want+2 {
		t.Errorf("shared by 2: admitted %d, want about %d", got, want)
	}
	if got := run(1); got < 2*want-4 {
		t.Errorf("unshared: admitted %d, want about %d", got, 2*want)
	}
}

func TestConcurrentAcquireRelease(t *testing.T) {
	l := New(Config{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	max, cur := 0, 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				tk, d := l.Acquire("k", nil, "a", lim(0, 0, 3), nil)
				if d.Reason != OK {
					continue
				}
				mu.Lock()
				cur++
				max = maxInt(max, cur)
				mu.Unlock()
				mu.Lock()
				cur--
				mu.Unlock()
				tk.Release()
			}
		}()
	}
	wg.Wait()
	if max > 3 {
		t.Fatalf("%d concurrent with a limit of 3", max)
	}
	if _, d := l.Acquire("k", nil, "a", lim(0, 0, 3), nil); d.Reason != OK {
		t.Fatal("slots leaked")
	}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

func BenchmarkAcquireUnlimited(b *testing.B) {
	l := New(Config{})
	def := &snapshot.Limits{}
	b.ReportAllocs()
	for b.Loop() {
		tk, _ := l.Acquire("key_0123456789ab", nil, "acct_0123456789abcdef", nil, def)
		tk.Release()
	}
}

func BenchmarkAcquireLimited(b *testing.B) {
	l := New(Config{})
	def := lim(1e9, 1e6, 1000)
	b.ReportAllocs()
	for b.Loop() {
		tk, _ := l.Acquire("key_0123456789ab", nil, "acct_0123456789abcdef", nil, def)
		tk.Release()
	}
}

// Retain drops the state of keys and accounts a new snapshot no longer has; a held ticket
// of a dropped entry still releases.
func TestRetain(t *testing.T) {
	l := New(Config{})
	one := lim(0, 0, 1)
	held, d := l.Acquire("key_gone", one, "acct_gone", one, nil)
	if d.Reason != OK {
		t.Fatal(d)
	}
	if _, d := l.Acquire("key_kept", one, "acct_kept", one, nil); d.Reason != OK {
		t.Fatal(d)
	}
	l.Retain(&snapshot.Snapshot{Content: snapshot.Content{
		Keys: []snapshot.Key{{ID: "key_kept"}}, Accounts: []snapshot.Account{{ID: "acct_kept"}}}})
	if len(l.keys) != 1 || len(l.accounts) != 1 || l.keys["key_kept"] == nil || l.accounts["acct_kept"] == nil {
		t.Fatalf("kept %v %v", l.keys, l.accounts)
	}
	held.Release() // must not panic or touch the kept entries
	// The kept key's slot is still taken.
	if _, d := l.Acquire("key_kept", one, "acct_kept", one, nil); d.Reason != Concurrency {
		t.Fatalf("kept state lost: %+v", d)
	}
}

// TestDefaultMaxConcurrent: an account without limits of its own, under snapshot defaults
// without a concurrency bound, gets the node's default bound; the snapshot's defaults and
// the account's own limits win over it, and a negative default turns it off.
func TestDefaultMaxConcurrent(t *testing.T) {
	fill := func(l *Limiter, acct, defaults *snapshot.Limits) int {
		n := 0
		for ; n < 1000; n++ {
			if _, d := l.Acquire("k", nil, "a", acct, defaults); d.Reason != OK {
				break
			}
		}
		return n
	}
	cases := []struct {
		name           string
		cfg            Config
		acct, defaults *snapshot.Limits
		want           int
	}{
		{"node default", Config{}, nil, &snapshot.Limits{}, DefaultMaxConcurrent},
		{"node default, nil defaults", Config{}, nil, nil, DefaultMaxConcurrent},
		{"node default beside a default rate", Config{}, nil, lim(1e6, 1e6, 0), DefaultMaxConcurrent},
		{"shared by two nodes", Config{ShareNodes: 2}, nil, nil, DefaultMaxConcurrent / 2},
		{"set default", Config{DefaultMaxConcurrent: 7}, nil, nil, 7},
		{"snapshot default", Config{}, nil, lim(0, 0, 5), 5},
		{"account's own, unlimited", Config{}, &snapshot.Limits{}, nil, 1000},
		{"account's own", Config{}, lim(0, 0, 600), nil, 600},
		{"off", Config{DefaultMaxConcurrent: -1}, nil, nil, 1000},
	}
	for _, c := range cases {
		if got := fill(New(c.cfg), c.acct, c.defaults); got != c.want {
			t.Errorf("%s: %d admitted at once, want %d", c.name, got, c.want)
		}
	}
}
