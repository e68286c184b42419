package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/dataplane/memmeter"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// startSim starts a provider simulator on a random local port with server-wide knobs k.
func startSim(t testing.TB, name string, k simulator.Knobs) *simulator.Server {
	t.Helper()
	s := simulator.New(simulator.Config{Name: name, Knobs: k})
	if err := s.Start(context.Background(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// deadURL is a base URL on which nothing listens (connection refused).
func deadURL(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/v1"
}

// chatRoute is a chat route of the fixture's chat model.
func chatRoute(id, provider, baseURL, country string, prio, weight int) snapshot.Route {
	region := strings.ToLower(country) + "-1"
	return snapshot.Route{ID: id, Model: fixture.ModelChat, Provider: provider, BaseURL: baseURL,
		Protocols: []string{snapshot.EndpointChat, snapshot.EndpointCompletions},
		Region:    region, Country: country, Priority: prio, Weight: weight}
}

// simGateway is a data-plane server in front of simulators.
type simGateway struct {
	URL    string
	Srv    *Server
	Store  *index.Store
	Meter  *memmeter.Meter
	Keys   fixture.Keys
	Snap   *snapshot.Snapshot
	Health *routing.Health
}

// startSimGateway serves the fixture's accounts and keys with routes as the only routes.
// Breakers open after 3 consecutive failures and probe after 300 ms unless opts change
// the config.
func startSimGateway(t testing.TB, routes []snapshot.Route, opts ...func(*Config)) *simGateway {
	t.Helper()
	snap, ks := fixture.Snapshot(1, "http://unused.invalid/v1", time.Now())
	snap.Routes = routes
	x, err := index.Build(snap)
	if err != nil {
		t.Fatal(err)
	}
	g := &simGateway{Store: &index.Store{}, Meter: memmeter.New(0), Keys: ks, Snap: snap,
		Health: routing.NewHealth(routing.HealthConfig{ConsecutiveFailures: 3, OpenFor: 300 * time.Millisecond})}
	g.Store.Swap(x)
	g.Meter.SeedBalances(snap.Balances, snap.BalanceSeq)
	cfg := Config{Store: g.Store, Meter: g.Meter, Health: g.Health, Settings: Settings{HeaderTimeout: 5 * time.Second},
		Pool: proxy.NewPool(proxy.Config{ConnectTimeout: time.Second, FirstByteTimeout: 2 * time.Second})}
	for _, o := range opts {
		o(&cfg)
	}
	g.Srv, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g.Health = g.Srv.cfg.Health
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Srv.Serve(ln)
	t.Cleanup(func() { _ = g.Srv.Shutdown() })
	// fasthttp's Shutdown waits for connections that never sent a request (Go's transport
	// may dial one more than it uses) until HeaderTimeout: close the client side first.
	t.Cleanup(testClient.CloseIdleConnections)
	g.URL = "http://" + ln.Addr().String()
	return g
}

// route returns the indexed route with id (for breaker state).
func (g *simGateway) route(t testing.TB, id string) *index.Route {
	t.Helper()
	m, _ := g.Store.Load().Model(fixture.ModelChat)
	for _, r := range m.Routes {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no route %s", id)
	return nil
}

var testClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// post sends a chat request with key and extra headers (name, value pairs).
func (g *simGateway) post(t testing.TB, key, body string, hdr ...string) result {
	t.Helper()
	return g.postTo(t, "/v1/chat/completions", key, body, hdr...)
}

// postTo sends a request to path with key and extra headers (name, value pairs).
func (g *simGateway) postTo(t testing.TB, path, key, body string, hdr ...string) result {
	t.Helper()
	req, err := http.NewRequest("POST", g.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{resp.StatusCode, resp.Header, string(b)}
}

// record waits for the n-th record and returns it.
func (g *simGateway) record(t testing.TB, n int) *usage.Record {
	t.Helper()
	return awaitRecords(t, g.Meter, n)[n-1]
}

// awaitRecords is the one wait of the test harnesses for records: until m holds n, woken by
// each record (memmeter.WaitCount), at most 5 s. It returns the records kept.
func awaitRecords(t testing.TB, m *memmeter.Meter, n int) []*usage.Record {
	t.Helper()
	if !m.WaitCount(n, 5*time.Second) {
		t.Fatalf("waited for %d records, have %d", n, m.Count())
	}
	return m.Records()
}

const (
	chatPlainReq  = `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"max_tokens":4}`
	chatStreamReq = `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"max_tokens":4,"stream":true}`
)

// waitFor polls cond until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool { return poll.Wait(d, cond) }
