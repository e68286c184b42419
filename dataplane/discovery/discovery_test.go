package discovery

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/dnstest"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/shared/snapshot"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// syncBuffer is a log sink safe for the resolver's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Count(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), sub)
}

// setup serves the fixture with its Swedish chat route discovered at baseURL and returns
// the store, a Discoverer resolving through dns, its clock and log.
func setup(t *testing.T, dns *dnstest.Server, discovery, baseURL string) (*index.Store, *Discoverer, *fakeClock, *syncBuffer) {
	t.Helper()
	s, _ := fixture.Snapshot(1, "http://127.0.0.1:1/v1", time.Unix(1_800_000_000, 0))
	for i := range s.Routes {
		if s.Routes[i].ID == fixture.RouteChatSE {
			s.Routes[i].BaseURL, s.Routes[i].Discovery = baseURL, discovery
		}
	}
	x, err := index.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	store := &index.Store{}
	store.Swap(x)
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	logs := &syncBuffer{}
	d := New(Config{Store: store, Resolver: NewResolver(dns.Addr), Now: clock.Now,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Build: func(s *snapshot.Snapshot, rep index.Replicas) (*index.Index, error) {
			return index.BuildReplicas(s, nil, rep)
		}})
	return store, d, clock, logs
}

// addrsOf lists the replica addresses the current index serves for the discovered route.
func addrsOf(store *index.Store) []string {
	var out []string
	for _, r := range store.Load().Replicas()[fixture.RouteChatSE] {
		out = append(out, r.Addr)
	}
	return out
}

func TestResolveFollowsRecords(t *testing.T) {
	dns := dnstest.Start(t)
	const name = "vllm.llm.gateway.test"
	store, d, _, logs := setup(t, dns, snapshot.DiscoveryDNS, "http://"+name+":8000/v1")
	ctx := context.Background()
	steps := []struct {
		name    string
		records []string
		failing bool
		want    []string
		rebuilt bool
	}{
		{"two pods", []string{"127.0.0.3", "127.0.0.2"}, false, []string{"127.0.0.2:8000", "127.0.0.3:8000"}, true},
		{"nothing changed", []string{"127.0.0.2", "127.0.0.3"}, false, []string{"127.0.0.2:8000", "127.0.0.3:8000"}, false},
		{"one gone, one new", []string{"127.0.0.3", "127.0.0.4", "fd00::4"}, false,
			[]string{"127.0.0.3:8000", "127.0.0.4:8000", "[fd00::4]:8000"}, true},
		{"DNS fails", nil, true, []string{"127.0.0.3:8000", "127.0.0.4:8000", "[fd00::4]:8000"}, false},
		{"DNS still fails", nil, true, []string{"127.0.0.3:8000", "127.0.0.4:8000", "[fd00::4]:8000"}, false},
		{"DNS back", []string{"127.0.0.4"}, false, []string{"127.0.0.4:8000"}, true},
	}
	for _, st := range steps {
		dns.SetA(name, st.records...)
		dns.SetFailing(st.failing)
		before := store.Load()
		d.Resolve(ctx)
		if got := addrsOf(store); !slices.Equal(got, st.want) {
			t.Fatalf("%s: replicas %v, want %v", st.name, got, st.want)
		}
		if rebuilt := store.Load() != before; rebuilt != st.rebuilt {
			t.Fatalf("%s: index rebuilt %v, want %v", st.name, rebuilt, st.rebuilt)
		}
	}
	if n := logs.Count("DNS lookup failed"); n != 1 {
		t.Fatalf("lookup failure logged %d times, want once:\n%s", n, logs.b.String())
	}
	// The served routes are the replicas, with their parent's fields.
	m, _ := store.Load().Model(fixture.ModelChat)
	r := m.Routes[0]
	if r.ID != fixture.RouteChatSE+"@127.0.0.4:8000" || r.Parent != fixture.RouteChatSE || r.UpstreamHost != name+":8000" || r.Country != "SE" {
		t.Fatalf("replica route %+v", r)
	}
}

func TestEmptyAnswerKeepsReplicasForGrace(t *testing.T) {
	dns := dnstest.Start(t)
	const name = "vllm.llm.gateway.test"
	store, d, clock, _ := setup(t, dns, snapshot.DiscoveryDNS, "http://"+name+":8000/v1")
	ctx := context.Background()
	dns.SetA(name, "127.0.0.2")
	d.Resolve(ctx)
	dns.SetA(name) // NXDOMAIN: no pod ready
	steps := []struct {
		after time.Duration
		want  []string
	}{
		{0, []string{"127.0.0.2:8000"}},
		{DefaultEmptyGrace - time.Second, []string{"127.0.0.2:8000"}},
		{time.Second, nil},
		{time.Hour, nil},
	}
	for i, st := range steps {
		clock.Add(st.after)
		d.Resolve(ctx)
		if got := addrsOf(store); !slices.Equal(got, st.want) {
			t.Fatalf("step %d: replicas %v, want %v", i, got, st.want)
		}
	}
	m, _ := store.Load().Model(fixture.ModelChat)
	if c := m.Candidates("se", index.EPChat); len(c) != 0 {
		t.Fatalf("a route without replicas still has candidates: %v", c[0].Route.ID)
	}
	dns.SetA(name, "127.0.0.5")
	d.Resolve(ctx)
	if got := addrsOf(store); !slices.Equal(got, []string{"127.0.0.5:8000"}) {
		t.Fatalf("records back, replicas %v", got)
	}
}

func TestSRVGivesTargetsAndPorts(t *testing.T) {
	dns := dnstest.Start(t)
	const name = "_http._tcp.vllm.llm.gateway.test"
	store, d, _, logs := setup(t, dns, snapshot.DiscoveryDNSSRV, "http://"+name+"/v1")
	dns.SetSRV(name, dnstest.SRV{Target: "pod-a.vllm.llm.gateway.test", Port: 8001},
		dnstest.SRV{Target: "pod-b.vllm.llm.gateway.test", Port: 8002})
	dns.SetA("pod-a.vllm.llm.gateway.test", "127.0.0.2")
	dns.SetA("pod-b.vllm.llm.gateway.test", "127.0.0.3")
	d.Resolve(context.Background())
	want := []index.Replica{
		{Addr: "127.0.0.2:8001", Host: "pod-a.vllm.llm.gateway.test:8001"},
		{Addr: "127.0.0.3:8002", Host: "pod-b.vllm.llm.gateway.test:8002"},
	}
	if got := store.Load().Replicas()[fixture.RouteChatSE]; !slices.Equal(got, want) {
		t.Fatalf("SRV replicas %+v, want %+v\n%s", got, want, logs.b.String())
	}
}

func TestNewSnapshotGetsReplicas(t *testing.T) {
	dns := dnstest.Start(t)
	const name = "vllm.llm.gateway.test"
	store, d, _, _ := setup(t, dns, snapshot.DiscoveryDNS, "http://"+name+":8000/v1")
	dns.SetA(name, "127.0.0.2")
	d.Resolve(context.Background())
	// A new snapshot built as the node's sync builds it keeps the replicas.
	x, err := index.BuildReplicas(store.Load().Snapshot, nil, d.Replicas())
	if err != nil {
		t.Fatal(err)
	}
	store.Swap(x)
	if got := addrsOf(store); !slices.Equal(got, []string{"127.0.0.2:8000"}) {
		t.Fatalf("replicas after a new snapshot %v", got)
	}
}
