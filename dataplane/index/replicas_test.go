package index

import (
	"slices"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/shared/residency"
	"github.com/sekgate/gateway/shared/snapshot"
)

// discoveredSnapshot is the fixture with the Swedish chat route discovered from DNS.
func discoveredSnapshot(t *testing.T, baseURL, discovery, metricsURL string) *snapshot.Snapshot {
	t.Helper()
	s, _ := fixture.Snapshot(7, "http://127.0.0.1:1/v1", time.Unix(1_800_000_000, 0))
	for i := range s.Routes {
		if s.Routes[i].ID == fixture.RouteChatSE {
			s.Routes[i].BaseURL, s.Routes[i].Discovery, s.Routes[i].MetricsURL = baseURL, discovery, metricsURL
		}
	}
	return s
}

func chatSE(t *testing.T, x *Index) []string {
	t.Helper()
	m, _ := x.Model(fixture.ModelChat)
	var out []string
	for _, c := range m.Candidates(residency.SE, EPChat) {
		out = append(out, c.Route.ID)
	}
	return out
}

func TestBuildReplicas(t *testing.T) {
	a := Replica{Addr: "127.0.0.2:8000", Host: "vllm.llm.svc:8000"}
	b := Replica{Addr: "127.0.0.3:8000", Host: "vllm.llm.svc:8000"}
	tests := []struct {
		name      string
		rep       Replicas
		want      []string
		wantSplit bool
	}{
		{"no replicas yet", nil, nil, false},
		{"one", Replicas{fixture.RouteChatSE: {a}}, []string{fixture.RouteChatSE + "@127.0.0.2:8000"}, true},
		{"two", Replicas{fixture.RouteChatSE: {a, b}},
			[]string{fixture.RouteChatSE + "@127.0.0.2:8000", fixture.RouteChatSE + "@127.0.0.3:8000"}, true},
		{"another route's", Replicas{"elsewhere": {a}}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := discoveredSnapshot(t, "http://vllm.llm.svc:8000/v1", snapshot.DiscoveryDNS, "")
			x, err := BuildReplicas(s, nil, tt.rep)
			if err != nil {
				t.Fatal(err)
			}
			if got := chatSE(t, x); !slices.Equal(got, tt.want) {
				t.Fatalf("Swedish chat candidates %v, want %v", got, tt.want)
			}
			if len(x.Discovered()) != 1 || x.Discovered()[0].ID != fixture.RouteChatSE {
				t.Fatalf("discovered %+v", x.Discovered())
			}
			if n := len(x.Served()); n != len(s.Routes)-1+len(tt.want) {
				t.Fatalf("%d routes served, want %d", n, len(s.Routes)-1+len(tt.want))
			}
			// With replicas or not, the model stays visible with the route's endpoints.
			a, _ := x.Account(fixture.AcctSE)
			m, ok := a.VisibleModel(fixture.ModelChat)
			if !ok || !slices.Contains(m.Endpoints(residency.SE), snapshot.EndpointMessages) {
				t.Fatalf("chat model visible %v, endpoints %v", ok, m.Endpoints(residency.SE))
			}
		})
	}
}

func TestReplicaRoute(t *testing.T) {
	tests := []struct {
		name, baseURL, metrics, disc string
		rep                          Replica
		wantBase, wantHost, wantSNI  string
		wantMetrics                  string
	}{
		{"dns http", "http://vllm.llm.svc:8000/v1", "", snapshot.DiscoveryDNS, Replica{"10.0.0.5:8000", "vllm.llm.svc:8000"},
			"http://10.0.0.5:8000/v1", "vllm.llm.svc:8000", "", "http://10.0.0.5:8000/metrics"},
		{"srv https", "https://_https._tcp.vllm.llm.svc/llm/v1", "", snapshot.DiscoveryDNSSRV,
			Replica{"10.0.0.6:9443", "pod-1.vllm.llm.svc:9443"},
			"https://10.0.0.6:9443/llm/v1", "pod-1.vllm.llm.svc:9443", "pod-1.vllm.llm.svc", "https://10.0.0.6:9443/metrics"},
		{"metrics on its own port", "http://vllm.llm.svc:8000/v1", "http://vllm.llm.svc:9090/metrics", snapshot.DiscoveryDNS,
			Replica{"10.0.0.5:8000", "vllm.llm.svc:8000"}, "http://10.0.0.5:8000/v1", "vllm.llm.svc:8000", "", "http://10.0.0.5:9090/metrics"},
		{"ipv6", "http://vllm.llm.svc:8000/v1", "http://vllm.llm.svc/metrics", snapshot.DiscoveryDNS,
			Replica{"[fd00::5]:8000", "vllm.llm.svc:8000"}, "http://[fd00::5]:8000/v1", "vllm.llm.svc:8000", "", "http://[fd00::5]/metrics"},
		{"metrics off", "http://vllm.llm.svc:8000/v1", "off", snapshot.DiscoveryDNS, Replica{"10.0.0.5:8000", "vllm.llm.svc:8000"},
			"http://10.0.0.5:8000/v1", "vllm.llm.svc:8000", "", "off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := discoveredSnapshot(t, tt.baseURL, tt.disc, tt.metrics)
			x, err := BuildReplicas(s, nil, Replicas{fixture.RouteChatSE: {tt.rep}})
			if err != nil {
				t.Fatal(err)
			}
			m, _ := x.Model(fixture.ModelChat)
			c := m.Candidates(residency.SE, EPChat)
			if len(c) != 1 {
				t.Fatalf("%d candidates", len(c))
			}
			r := c[0].Route
			if r.BaseURL != tt.wantBase || r.UpstreamAddr != tt.rep.Addr || r.UpstreamHost != tt.wantHost ||
				r.ServerName != tt.wantSNI || r.MetricsURL != tt.wantMetrics || r.Parent != fixture.RouteChatSE {
				t.Fatalf("replica route %+v", r)
			}
			if r.Country != "SE" || r.Provider != "sim-se" || r.UpstreamModel != fixture.UpstreamChatSE || !r.Translate {
				t.Fatalf("replica lost its parent's fields: %+v", r)
			}
		})
	}
}

func TestReplicasEqual(t *testing.T) {
	a := Replicas{"r": {{Addr: "127.0.0.2:1", Host: "h:1"}}}
	tests := []struct {
		name string
		o    Replicas
		want bool
	}{
		{"same", Replicas{"r": {{Addr: "127.0.0.2:1", Host: "h:1"}}}, true},
		{"other addr", Replicas{"r": {{Addr: "127.0.0.3:1", Host: "h:1"}}}, false},
		{"more", Replicas{"r": {{Addr: "127.0.0.2:1", Host: "h:1"}}, "s": nil}, false},
		{"none", nil, false},
	}
	for _, tt := range tests {
		if got := a.Equal(tt.o); got != tt.want {
			t.Errorf("%s: Equal = %v", tt.name, got)
		}
	}
}
