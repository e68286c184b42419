package benchrouting

import (
	"context"
	"testing"
	"time"
)

// A short run of one workload through the gateway, straight to the replicas and through
// the pass-through node answers every request (figures are not checked: they need the
// full benchmark).
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every workload for seconds; skipped with -short")
	}
	w := Workloads()[0]
	arrivals := w.schedule(1500*time.Millisecond, 1)
	if len(arrivals) == 0 {
		t.Fatal("no arrivals")
	}
	for _, p := range []Policy{Policies[3], Policies[4], Policies[6]} {
		r, err := runOne(context.Background(), w, p, arrivals, 1)
		if err != nil {
			t.Fatal(err)
		}
		if r.Requests == 0 || r.OK != r.Requests {
			t.Fatalf("%s: %+v", p.Name, r)
		}
		if r.PrefixHitRate <= 0 {
			t.Fatalf("%s: no prefix-cache hits in %+v", p.Name, r)
		}
		if r.TenantReplicas < 1 || p.Client == "pin" && r.TenantReplicas != 1 {
			t.Fatalf("%s: replicas per tenant %.2f", p.Name, r.TenantReplicas)
		}
	}
}

// Two nodes behind the balancer answer every request, each node gets half of them, and
// the prefixes still hit the replicas' caches.
func TestSmokeFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a fleet workload for seconds; skipped with -short")
	}
	w := Workloads()[0]
	r, err := runOne(context.Background(), w, Policies[3], w.schedule(1500*time.Millisecond, 1), 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.Nodes != 2 || r.Requests == 0 || r.OK != r.Requests || r.PrefixHitRate <= 0 {
		t.Fatalf("%+v", r)
	}
	if len(r.NodeStats) != 2 || r.NodeStats[0].Sent == 0 || r.NodeStats[0].Sent-r.NodeStats[1].Sent > 1 {
		t.Fatalf("balancer's requests per node: %+v", r.NodeStats)
	}
	var served int64
	for _, x := range r.Replicas {
		served += x.Streams // the nodes' warm-up copies are nobody's requests
	}
	if served != r.NodeStats[0].Sent+r.NodeStats[1].Sent {
		t.Fatalf("replicas received %d of the workload's requests, nodes were sent %+v", served, r.NodeStats)
	}
}

// An account limited to 10 requests/s and sending 45/s through two nodes is admitted at
// about its limit across the fleet (each node enforces half), and refused the rest.
func TestSmokeFleetLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a fleet workload for seconds; skipped with -short")
	}
	var w *Workload
	for _, x := range Workloads() {
		if x.LimitRPS > 0 {
			w = x
		}
	}
	if w == nil {
		t.Fatal("no rate-limited workload")
	}
	r, err := runOne(context.Background(), w, Policies[3], w.schedule(2*time.Second, 1), 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.Throttled == 0 || r.Errors != 0 || r.AdmittedPerSec < 5 || r.AdmittedPerSec > 20 {
		t.Fatalf("admitted %.1f/s, %+v", r.AdmittedPerSec, r)
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
