package fairq

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sekgate/gateway/internal/poll"
)

func (q *Queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.depth
}

func waitLen(t *testing.T, q *Queue, n int) {
	t.Helper()
	if !poll.Wait(10*time.Second, func() bool { return q.len() == n }) {
		t.Fatalf("queue length %d, want %d", q.len(), n)
	}
}

// Requests are let go in turns across accounts, by weight; a burst of one account does not
// hold back another's requests.
func TestTurns(t *testing.T) {
	for _, tc := range []struct {
		name    string
		weightA int
		want    string
	}{{"equal", 1, "ababaaaa"}, {"a weighs 2", 2, "aabaabaa"}} {
		t.Run(tc.name, func(t *testing.T) {
			q := New(Config{MaxWait: time.Minute})
			var open atomic.Bool
			ready := roomIf(&open)
			order := make(chan byte, 16)
			add := func(acct string, weight int) {
				n := q.len()
				go func() {
					if _, err := q.Wait(context.Background(), q.Flow(acct, weight), "standard", ready); err == nil {
						order <- acct[0]
					}
				}()
				waitLen(t, q, n+1)
			}
			for range 6 {
				add("a", tc.weightA)
			}
			add("b", 1)
			add("b", 1)
			open.Store(true)
			got := ""
			for range 8 {
				if !q.Kick() {
					t.Fatal("nothing let go")
				}
				got += string(<-order)
			}
			if got != tc.want {
				t.Fatalf("order %s, want %s", got, tc.want)
			}
			if q.Kick() || q.Busy() {
				t.Fatal("queue not empty")
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	q := New(Config{MaxWait: 30 * time.Millisecond, AccountDepth: 1})
	never := Room(func() Space { return Space{} })
	done := make(chan error)
	go func() {
		_, err := q.Wait(context.Background(), q.Flow("a", 1), "standard", never)
		done <- err
	}()
	waitLen(t, q, 1)
	if _, err := q.Wait(context.Background(), q.Flow("a", 1), "standard", never); !errors.Is(err, ErrFull) {
		t.Fatalf("second of a full account: %v", err)
	}
	if err := <-done; !errors.Is(err, ErrTimeout) {
		t.Fatalf("waited past MaxWait: %v", err)
	}
	if q.Busy() {
		t.Fatal("timed-out request still queued")
	}
}

// A request whose routes have room goes at once when nobody waits.
func TestNoWaitWhenReady(t *testing.T) {
	q := New(Config{})
	if _, err := q.Wait(context.Background(), q.Flow("a", 1), "standard", Room(func() Space { return sp(1, 0) })); err != nil {
		t.Fatal(err)
	}
}

// sp is the space of free slots of capacity, each beyond its server's last free slot.
func sp(free, capacity float64) Space { return Space{Free: free, Spare: free, Capacity: capacity} }

// roomIf is a Room of one free slot while open is set, none otherwise.
func roomIf(open *atomic.Bool) Room {
	return func() Space {
		if open.Load() {
			return sp(1, 0)
		}
		return Space{}
	}
}

// A pass of Kick that lets nothing go (no room yet) keeps the turn and its count: a
// weight-2 account still gets two grants for the other's one.
func TestTurnKeptWhileNothingGoes(t *testing.T) {
	q := New(Config{MaxWait: time.Minute})
	var open atomic.Bool
	order := make(chan byte, 16)
	add := func(acct string, weight int) {
		n := q.len()
		go func() {
			if _, err := q.Wait(context.Background(), q.Flow(acct, weight), "standard", roomIf(&open)); err == nil {
				order <- acct[0]
			}
		}()
		waitLen(t, q, n+1)
	}
	for range 6 {
		add("a", 2)
	}
	add("b", 1)
	got := ""
	for range 7 {
		open.Store(false)
		if q.Kick() {
			t.Fatal("let go without room")
		}
		open.Store(true)
		if !q.Kick() {
			t.Fatal("nothing let go")
		}
		got += string(<-order)
	}
	if got != "aabaaaa" {
		t.Fatalf("order %s, want aabaaaa", got)
	}
}

// An account with more requests in flight than its share leaves Headroom slots free for
// the others; alone, or below its share, it takes any free slot.
func TestHeadroomForLightAccounts(t *testing.T) {
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	q := New(Config{Headroom: 2, Now: func() time.Time { return now }})
	heavy := q.Flow("heavy", 1)
	for range 12 {
		heavy.Start()
	}
	q.refresh(now)
	const capacity = 16
	if !q.Admit(heavy, sp(1, capacity)) {
		t.Fatal("alone: refused a free slot")
	}
	light := q.Flow("light", 1)
	light.Start()
	q.refresh(now)
	for _, tc := range []struct {
		name     string
		f        *Flow
		free     float64
		capacity float64
		want     bool
	}{
		{"heavy, headroom only", heavy, 2, capacity, false},
		{"heavy, beyond headroom", heavy, 3, capacity, true},
		{"light, headroom", light, 1, capacity, true},
		{"light, none free", light, 0, capacity, false},
		{"heavy, capacity 8: headroom at most an eighth", heavy, 2, 8, true},
		{"heavy, capacity 8, the eighth", heavy, 1, 8, false},
		{"heavy, capacity 4: no headroom", heavy, 1, 4, true},
	} {
		if got := q.Admit(tc.f, sp(tc.free, tc.capacity)); got != tc.want {
			t.Errorf("%s: Admit = %v, want %v", tc.name, got, tc.want)
		}
	}
	// Free slots that are each the last of their server are left to the light account,
	// however many servers have one.
	if q.Admit(heavy, Space{Free: 4, Capacity: capacity}) || !q.Admit(light, Space{Free: 4, Capacity: capacity}) {
		t.Error("the heavy account took a server's last free slot, or the light one was kept off it")
	}
	if !q.Heavy(heavy) || q.Heavy(light) {
		t.Errorf("Heavy: heavy %v, light %v", q.Heavy(heavy), q.Heavy(light))
	}

	// The light account gone quiet past Linger: its recent use (1) stays reserved for
	// Remember, then the heavy one is alone again.
	light.Done()
	now = now.Add(3 * time.Second)
	q.refresh(now)
	if q.Admit(heavy, sp(2, capacity)) || !q.Admit(heavy, sp(3, capacity)) {
		t.Fatal("light account's recent slot and the headroom not kept, or more than them")
	}
	now = now.Add(time.Minute)
	q.refresh(now)
	if !q.Admit(heavy, sp(1, capacity)) {
		t.Fatal("others idle past Remember: heavy account still kept off the last slots")
	}
}

// One request in flight never makes an account heavy for the routes, even where one slot
// is its whole share.
func TestOneRequestIsNotHeavy(t *testing.T) {
	now := time.Now()
	q := New(Config{Now: func() time.Time { return now }})
	const capacity = 16
	for i := range 17 {
		q.Flow(fmt.Sprint("acct", i), 1).Start()
	}
	q.Admit(q.Flow("acct0", 1), sp(1, capacity)) // the capacity seen
	q.refresh(now)
	if one := q.Flow("acct0", 1); !one.heavy(capacity) || q.Heavy(one) {
		t.Errorf("one of 16 slots among 17 accounts: heavy by share %v, Heavy %v; want true, false", one.heavy(capacity), q.Heavy(one))
	}
	// Nor is it kept off the servers' last free slots when it starts a second one.
	if !q.Admit(q.Flow("acct0", 1), Space{Free: 4, Capacity: capacity}) {
		t.Error("one in flight: kept off free slots that are each the last of their server")
	}
	two := q.Flow("acct1", 1)
	two.Start()
	if !q.Heavy(two) || q.Admit(two, Space{Free: 4, Capacity: capacity}) {
		t.Error("two of 16 slots among 17 accounts: not Heavy, or given a server's last free slot")
	}
}

// An account that took every slot first, alone, leaves free what an absent peer recently
// used once it is above its share (up to what its share leaves the peer), and the peer
// finds a slot when it comes back; a heavy account's waiting request is not let go while
// a light one waits.
func TestReserveAndMaxMin(t *testing.T) {
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	q := New(Config{Headroom: -1, MaxWait: time.Minute, Now: func() time.Time { return now }})
	const capacity = 16
	b := q.Flow("b", 1)
	for range 10 {
		b.Start()
	}
	for range 10 {
		b.Done()
	}
	now = now.Add(5 * time.Second) // b quiet past Linger, within Remember
	a := q.Flow("a", 1)
	started := 0
	for free := float64(capacity); free > 0; free-- {
		q.refresh(now)
		if !q.Admit(a, sp(free, capacity)) {
			break
		}
		a.Start()
		started++
	}
	// a is above its share of 8 only once it holds more: it starts a ninth, and then
	// leaves the 7 free for b.
	if started != capacity/2+1 {
		t.Fatalf("a started %d of %d slots while b's recent 10 were reserved, want %d (its share and one)", started, capacity, capacity/2+1)
	}
	b = q.Flow("b", 1)
	q.refresh(now)
	if !q.Admit(b, sp(capacity-float64(started), capacity)) {
		t.Fatal("b came back and found no slot")
	}

	// Max-min over the queue: with both waiting, the heavy account's request is passed.
	var open atomic.Bool
	ready := roomIf(&open)
	got := make(chan string, 2)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // the heavy account's request, still waiting
	for _, f := range []struct {
		name string
		fl   *Flow
	}{{"a", a}, {"b", b}} {
		n := q.len()
		go func() {
			if _, err := q.Wait(ctx, f.fl, "standard", ready); err == nil {
				got <- f.name
			}
		}()
		waitLen(t, q, n+1)
	}
	open.Store(true)
	if !q.Kick() {
		t.Fatal("nothing let go")
	}
	if first := <-got; first != "b" {
		t.Fatalf("%s let go first, want the light account b", first)
	}
}

// The fair queue's cost on every request when nobody waits: the account's flow, the
// admission check and its in-flight count (no allocation once the flow exists).
func BenchmarkAdmit(b *testing.B) {
	q := New(Config{})
	q.Flow("acct_bench", 1)
	b.ReportAllocs()
	for b.Loop() {
		f := q.Flow("acct_bench", 1)
		if q.Admit(f, sp(3, 16)) {
			f.Start()
			f.Done()
		}
	}
}
