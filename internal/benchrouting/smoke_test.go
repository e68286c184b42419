package benchrouting

import (
	"context"
	"testing"
	"time"
)

// A short run of one workload through the gateway and straight to the replicas answers
// every request (figures are not checked: they need the full benchmark).
func TestSmoke(t *testing.T) {
	w := Workloads()[0]
	arrivals := w.schedule(1500*time.Millisecond, 1)
	if len(arrivals) == 0 {
		t.Fatal("no arrivals")
	}
	for _, p := range []Policy{Policies[3], Policies[4]} {
		r, err := runOne(context.Background(), w, p, arrivals)
		if err != nil {
			t.Fatal(err)
		}
		if r.Requests == 0 || r.OK != r.Requests {
			t.Fatalf("%s: %+v", p.Name, r)
		}
		if r.PrefixHitRate <= 0 {
			t.Fatalf("%s: no prefix-cache hits in %+v", p.Name, r)
		}
	}
}

func TestScheduleIsSeeded(t *testing.T) {
	w := Workloads()[2]
	a, b := w.schedule(5*time.Second, 7), w.schedule(5*time.Second, 7)
	if len(a) == 0 || len(a) != len(b) || a[len(a)-1] != b[len(b)-1] {
		t.Fatal("same seed, different schedules")
	}
	hot := 0
	for _, x := range a {
		if x.tenant == 0 {
			hot++
		}
	}
	if f := float64(hot) / float64(len(a)); f < 0.45 || f > 0.75 {
		t.Fatalf("hot tenant's share %.2f, want about 0.6", f)
	}
}
