// Package poll waits in tests for a condition that only polling can observe: a process
// becoming ready, a file watcher noticing a change, a counter in another goroutine.
// Where the code under test exposes a channel or takes a clock, tests wait on that
// instead; where polling is the only way, they use this package rather than a loop
// around time.Sleep.
//
// Deadlines are generous on purpose: on a busy machine a condition may take a while,
// and a tight bound only makes a test flaky. A test that holds waits as long as the
// condition takes, never as long as the deadline.
package poll

import (
	"testing"
	"time"
)

// Interval is the time between two checks of Holds, and the longest between two checks
// of Wait, which starts at a millisecond and doubles up to it: a condition met soon is
// seen soon, and a slow one (an HTTP call, a query) is not asked in a tight loop.
const Interval = 50 * time.Millisecond

// Wait checks cond until it holds or within has passed, and reports whether it held.
// cond is checked once more at the deadline.
func Wait(within time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	step := time.Millisecond
	next := time.NewTimer(step)
	defer next.Stop()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		select {
		case <-next.C:
			if cond() {
				return true
			}
			step = min(2*step, Interval)
			next.Reset(step)
		case <-deadline.C:
			return cond()
		}
	}
}

// WaitEvery is Wait at a fixed pace: cond is checked every interval, for checks that
// cost enough to space out (reloading a browser page, reading a rate-limited API).
func WaitEvery(within, every time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return true
			}
		case <-deadline.C:
			return cond()
		}
	}
}

// Until fails the test when cond does not hold within the given time; what names the
// condition in the failure.
func Until(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Wait(within, cond) {
		t.Fatalf("timed out after %s waiting for: %s", within, what)
	}
}

// Holds checks cond at the start, about five times over the period (at most every
// Interval) and at its end, and fails the test as soon as it does not hold: the negative
// check of something that would happen soon if it happened at all (a second copy of a
// record, a batch sent too early). The period is the one real wait it costs; choose it
// from the mechanism's interval with room for a busy machine.
func Holds(t testing.TB, period time.Duration, what string, cond func() bool) {
	t.Helper()
	if !cond() {
		t.Fatalf("%s: does not hold", what)
	}
	tick := time.NewTicker(max(period/5, Interval))
	defer tick.Stop()
	end := time.NewTimer(period)
	defer end.Stop()
	for {
		select {
		case <-tick.C:
			if !cond() {
				t.Fatalf("%s: stopped holding", what)
			}
		case <-end.C:
			if !cond() {
				t.Fatalf("%s: stopped holding", what)
			}
			return
		}
	}
}
