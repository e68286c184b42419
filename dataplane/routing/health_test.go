package routing

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/residency"
	"github.com/sekgate/gateway/shared/snapshot"
)

func route(id, base string) *index.Route {
	return &index.Route{Route: snapshot.Route{ID: id, BaseURL: base}}
}

func attempt(h *Health, r *index.Route, outcome error) (called bool, err error) {
	err = h.Do(r, func() error { called = true; return outcome })
	return called, err
}

// The open period and the probe are timed on synctest's clock: no real waiting.
func TestBreakerLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := NewHealth(HealthConfig{ConsecutiveFailures: 3, OpenFor: 100 * time.Millisecond})
		r := route("a", "http://a/v1")
		// Neutral outcomes and successes in between do not count toward opening.
		for range 5 {
			attempt(h, r, ErrNeutral)
		}
		attempt(h, r, ErrRouteFailed)
		attempt(h, r, ErrRouteFailed)
		attempt(h, r, nil)
		attempt(h, r, ErrRouteFailed)
		attempt(h, r, ErrRouteFailed)
		if st := h.State(r); st != "closed" {
			t.Fatalf("state %s with no 3 failures in a row", st)
		}
		attempt(h, r, ErrRouteFailed)
		if st := h.State(r); st != "open" {
			t.Fatalf("state %s after 3 failures in a row", st)
		}
		if called, err := attempt(h, r, nil); called || err != ErrOpen {
			t.Fatalf("open breaker let an attempt through (%v)", err)
		}
		time.Sleep(120 * time.Millisecond) // synctest's fake clock moves: no real wait
		if st := h.State(r); st != "half-open" {
			t.Fatalf("state %s after the open period", st)
		}
		// Half-open: one probe at a time.
		var wg sync.WaitGroup
		release := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.Do(r, func() error { <-release; return nil })
		}()
		synctest.Wait() // the probe is running, blocked on release
		if called, err := attempt(h, r, nil); called || err != ErrOpen {
			t.Fatalf("second probe let through while the first runs (%v)", err)
		}
		close(release)
		wg.Wait()
		if st := h.State(r); st != "closed" {
			t.Fatalf("state %s after a successful probe", st)
		}
		if h.Opened() != 1 {
			t.Errorf("opened %d", h.Opened())
		}
	})
}

func TestBreakerFailureRatio(t *testing.T) {
	h := NewHealth(HealthConfig{ConsecutiveFailures: 100, FailureRatio: 0.5, MinRequests: 10})
	r := route("a", "http://a/v1")
	for i := range 11 { // the check runs on a failure: the 11th attempt
		var out error
		if i%2 == 0 {
			out = ErrRouteFailed
		}
		attempt(h, r, out)
	}
	if st := h.State(r); st != "open" {
		t.Fatalf("state %s at 6 failures in 11 attempts", st)
	}
}

func TestBreakerErrorPassesThrough(t *testing.T) {
	h := NewHealth(HealthConfig{})
	other := errors.New("x")
	if _, err := attempt(h, route("a", "u"), other); err != other {
		t.Fatalf("err %v", err)
	}
}

// TestBreakerSurvivesSnapshotSwap: breakers are keyed by route ID and base URL, not by the
// *index.Route of one snapshot; a route whose address changed starts closed.
func TestBreakerSurvivesSnapshotSwap(t *testing.T) {
	h := NewHealth(HealthConfig{ConsecutiveFailures: 2, OpenFor: time.Hour})
	old := route("a", "http://10.0.0.1:8000/v1")
	attempt(h, old, ErrRouteFailed)
	attempt(h, old, ErrRouteFailed)
	same := route("a", "http://10.0.0.1:8000/v1") // the next snapshot's copy
	if st := h.State(same); st != "open" {
		t.Fatalf("state %s after a snapshot swap", st)
	}
	moved := route("a", "http://10.0.0.2:8000/v1")
	if st := h.State(moved); st != "closed" {
		t.Fatalf("moved route inherited state %s", st)
	}
	// Many swaps do not grow the breakers: one per route ID and base URL.
	for range 5000 {
		h.State(route("a", "http://10.0.0.1:8000/v1"))
	}
	if n := len(h.byKey); n != 2 {
		t.Fatalf("%d breakers after many swaps, want 2", n)
	}
	// A route's memo belongs to the Health that set it: another Health sharing the
	// snapshot keeps its own breaker.
	other := NewHealth(HealthConfig{ConsecutiveFailures: 2, OpenFor: time.Hour})
	if st := other.State(same); st != "closed" {
		t.Fatalf("a second Health saw the first one's breaker (%s)", st)
	}
	if st := h.State(same); st != "open" {
		t.Fatalf("state %s after a second Health used the route", st)
	}
}

// TestCandidatesStayInsidePolicy checks the guarantee routing builds on: for every policy
// and endpoint, the candidates the catalogue offers satisfy the policy and speak the
// endpoint (natively, or chat with translation allowed for Messages/Responses), and the
// plan orders only those candidates.
func TestCandidatesStayInsidePolicy(t *testing.T) {
	countries := []string{"SE", "DE", "FI", "US", "NO", "GB", "se"}
	protos := [][]string{
		{snapshot.EndpointChat}, {snapshot.EndpointChat, snapshot.EndpointCompletions},
		{snapshot.EndpointEmbeddings}, {snapshot.EndpointMessages}, {snapshot.EndpointResponses, snapshot.EndpointChat},
	}
	s := &snapshot.Snapshot{Content: snapshot.Content{Models: []snapshot.Model{{ID: "m"}}}}
	for i, c := range countries {
		for j, p := range protos {
			s.Routes = append(s.Routes, snapshot.Route{ID: c + string(rune('a'+j)) + string(rune('0'+i)), Model: "m",
				BaseURL: "http://h/v1", Protocols: p, Country: c, Priority: (i + j) % 3, Weight: j, Translate: j%2 == 0})
		}
	}
	x, err := index.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := x.Model("m")
	var sel Selector
	for _, pol := range []string{residency.SE, residency.EU, residency.Any, "", "mars"} {
		for e := index.EPChat; e <= index.EPSystemOne; e++ {
			cands := m.Candidates(pol, e)
			if !residency.Valid(pol) && len(cands) > 0 {
				t.Fatalf("unknown policy %q has candidates", pol)
			}
			for _, c := range sel.Plan(nil, cands) {
				r := c.Route
				if !residency.Satisfies(pol, r.Country) {
					t.Fatalf("policy %s offered route %s in %s", pol, r.ID, r.Country)
				}
				native := r.Speaks(e)
				translated := c.Translate && r.Translate && r.Speaks(index.EPChat) && (e == index.EPMessages || e == index.EPResponses)
				if native == translated {
					t.Fatalf("route %s for %s: native %v translated %v", r.ID, e.Path(), native, translated)
				}
			}
		}
	}
	if n := len(m.Candidates(residency.SE, index.EPChat)); n == 0 {
		t.Fatal("fixture offers no Swedish chat route")
	}
}

func BenchmarkHealthDo(b *testing.B) {
	h := NewHealth(HealthConfig{})
	r := route("a", "http://a/v1")
	b.ReportAllocs()
	for b.Loop() {
		h.Do(r, func() error { return nil })
	}
}

// Retain forgets gone replicas' breakers only: a replica's open breaker is not reported
// after it left DNS, while ordinary routes keep theirs.
func TestHealthRetainForgetsGoneReplicas(t *testing.T) {
	h := NewHealth(HealthConfig{ConsecutiveFailures: 1})
	routes := []*index.Route{route("plain", "http://a/v1"), route("v@10.0.0.5:8000", "http://10.0.0.5:8000/v1"),
		route("v@10.0.0.6:8000", "http://10.0.0.6:8000/v1")}
	for _, r := range routes {
		attempt(h, r, ErrRouteFailed) // all open
	}
	h.Retain(func(id, _ string) bool { return id == "v@10.0.0.6:8000" })
	got := map[string]string{}
	h.EachState(func(route, state string) { got[route] = state })
	want := map[string]string{"plain": "open", "v@10.0.0.6:8000": "open"}
	if len(got) != len(want) || got["plain"] != "open" || got["v@10.0.0.6:8000"] != "open" {
		t.Fatalf("breakers after Retain %v, want %v", got, want)
	}
}

// A breaker remembers whether the route's last counted attempt could not connect: that
// is what an open breaker means to the client (unreachable, or recovering).
func TestBreakerUnreachable(t *testing.T) {
	var h *Health
	for _, tc := range []struct {
		outcomes []error
		want     bool
	}{
		{[]error{ErrUnreachable}, true},
		{[]error{ErrUnreachable, ErrNeutral}, true}, // not counted: still unreachable
		{[]error{ErrUnreachable, nil}, false},
		{[]error{ErrUnreachable, ErrRouteFailed}, false},
		{[]error{ErrRouteFailed}, false},
		{nil, false},
	} {
		r := route("r", "http://10.0.0.9:8000/v1")
		h = NewHealth(HealthConfig{ConsecutiveFailures: 5, OpenFor: time.Hour})
		for _, o := range tc.outcomes {
			if _, err := attempt(h, r, o); err != o {
				t.Fatalf("Do returned %v for %v", err, o)
			}
		}
		if got := h.Unreachable(r); got != tc.want {
			t.Errorf("%v: unreachable %v, want %v", tc.outcomes, got, tc.want)
		}
	}
	// Connect failures open the breaker like any failure.
	r := route("u", "http://10.0.0.8:8000/v1")
	h = NewHealth(HealthConfig{ConsecutiveFailures: 2, OpenFor: time.Hour})
	attempt(h, r, ErrUnreachable)
	attempt(h, r, ErrUnreachable)
	if called, err := attempt(h, r, nil); called || err != ErrOpen || !h.Unreachable(r) {
		t.Fatalf("after two connect failures: called %v, %v, unreachable %v", called, err, h.Unreachable(r))
	}
}
