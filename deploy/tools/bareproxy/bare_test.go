package bareproxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/internal/simulator"
)

func startProxy(t *testing.T) (proxyURL string, up *simulator.Server) {
	t.Helper()
	up = simulator.New(simulator.Config{})
	if err := up.Start(context.Background(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	p, err := New(Config{Upstream: up.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return "http://" + ln.Addr().String(), up
}

func TestNewValidates(t *testing.T) {
	for _, up := range []string{"", "no-port"} {
		if _, err := New(Config{Upstream: up}); err == nil {
			t.Errorf("New(%q): want error", up)
		}
	}
}

func TestForwardsNonStreaming(t *testing.T) {
	url, _ := startProxy(t)
	body := `{"model":"m","messages":[{"role":"user","content":"hej hopp"}],"max_tokens":5}`
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"completion_tokens":5`) {
		t.Fatalf("status %d body %s", resp.StatusCode, b)
	}
	if resp.ContentLength != int64(len(b)) {
		t.Errorf("content length %d, body %d bytes", resp.ContentLength, len(b))
	}
	// Upstream errors pass through unchanged.
	resp2, err := http.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}],"sim":{"status":429}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != 429 {
		t.Errorf("injected 429 came back as %d", resp2.StatusCode)
	}
}

func TestUpstreamDown(t *testing.T) {
	url, up := startProxy(t)
	up.Close()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502", resp.StatusCode)
	}
}

// TestStreamFlushesEachEvent paces the upstream at one token per 40 ms and checks that every
// event reaches the client on its own, roughly when the upstream sent it.
func TestStreamFlushesEachEvent(t *testing.T) {
	url, _ := startProxy(t)
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hej"}],"sim":{"output_tokens":5,"tokens_per_second":25}}`
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	var times []time.Time
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			times = append(times, time.Now())
			done = sc.Text() == "data: [DONE]"
		}
	}
	if !done || len(times) < 7 {
		t.Fatalf("%d events, done=%v", len(times), done)
	}
	// Token events 2..6 are paced 40 ms apart; batched relays would deliver them together.
	for i := 2; i <= 5; i++ {
		if gap := times[i].Sub(times[i-1]); gap < 15*time.Millisecond {
			t.Errorf("event %d arrived %v after event %d: batched", i, gap, i-1)
		}
	}
}
