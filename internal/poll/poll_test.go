package poll

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		time.AfterFunc(3*time.Second, func() { n.Store(3) })
		start := time.Now()
		if !Wait(time.Minute, func() bool { return n.Load() == 3 }) {
			t.Fatal("condition met after 3s not seen within a minute")
		}
		if d := time.Since(start); d < 3*time.Second || d > 3*time.Second+Interval {
			t.Fatalf("Wait returned after %s, want 3s and at most an interval more", d)
		}
		start = time.Now()
		if Wait(time.Second, func() bool { return false }) {
			t.Fatal("a condition that never holds was reported held")
		}
		if d := time.Since(start); d != time.Second {
			t.Fatalf("Wait gave up after %s, want 1s", d)
		}
	})
}

func TestWaitEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		checks := 0
		start := time.Now()
		ok := WaitEvery(time.Minute, time.Second, func() bool { checks++; return time.Since(start) >= 3*time.Second })
		if !ok || checks != 4 || time.Since(start) != 3*time.Second {
			t.Fatalf("held %v after %d checks and %s, want 4 checks a second apart", ok, checks, time.Since(start))
		}
		if WaitEvery(2*time.Second, time.Second, func() bool { return false }) {
			t.Fatal("a condition that never holds was reported held")
		}
	})
}

func TestHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		Holds(t, time.Second, "always", func() bool { return true })
		if d := time.Since(start); d != time.Second {
			t.Fatalf("Holds checked for %s, want 1s", d)
		}
	})
	for _, tc := range []struct {
		name   string
		break_ time.Duration
	}{{"at once", 0}, {"midway", 500 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			failed := make(chan bool, 1)
			synctest.Test(t, func(*testing.T) {
				start := time.Now()
				ft := &fakeT{TB: t}
				done := make(chan struct{})
				go func() {
					defer close(done)
					defer func() { recover() }()
					Holds(ft, time.Second, "broken", func() bool { return time.Since(start) < tc.break_ })
				}()
				<-done
				failed <- ft.failed
			})
			if !<-failed {
				t.Fatal("Holds did not fail on a condition that stopped holding")
			}
		})
	}
}

// fakeT records a failure instead of ending the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(string, ...any) {
	f.failed = true
	panic("fatal")
}
