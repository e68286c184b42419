package server

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// TestEndStreamsAtDrainDeadline: Shutdown waits for an open stream; EndStreams ends it with
// an error event in the client's protocol, cancels the upstream and records it as cancelled,
// and Shutdown returns.
func TestEndStreamsAtDrainDeadline(t *testing.T) {
	up := startSim(t, "up", simulator.Knobs{TokensPerSecond: 0.5}) // one token every 2 s
	g := startSimGateway(t, []snapshot.Route{chatRoute("a", "p", up.BaseURL(), "SE", 0, 1)})
	req, _ := http.NewRequest("POST", g.URL+"/v1/chat/completions", strings.NewReader(chatStreamReq))
	req.Header.Set("Authorization", "Bearer "+g.Keys.SE)
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatalf("first event: %v", err)
	}
	if n := g.Srv.OpenStreams(); n != 1 {
		t.Fatalf("open streams %d, want 1", n)
	}

	shutdown := make(chan error, 1)
	go func() { shutdown <- g.Srv.Shutdown() }()
	select {
	case err := <-shutdown:
		t.Fatalf("Shutdown returned with a stream open: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if n := g.Srv.EndStreams(); n != 1 {
		t.Fatalf("EndStreams ended %d streams, want 1", n)
	}
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("read to the end: %v", err)
	}
	if !strings.Contains(string(rest), `"code":"not_ready"`) || strings.Contains(string(rest), "[DONE]") {
		t.Errorf("stream ended with %q, want the not_ready error event and no [DONE]", rest)
	}
	select {
	case <-shutdown:
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown still waiting after EndStreams")
	}
	rec := g.record(t, 1)
	if rec.Result != usage.ResultCancelled || rec.Status != 200 {
		t.Errorf("record result %q status %d, want cancelled 200", rec.Result, rec.Status)
	}
	if !waitFor(2*time.Second, func() bool { return up.Stats().Cancelled == 1 }) {
		t.Errorf("upstream not cancelled: %+v", up.Stats())
	}
	if n := g.Srv.OpenStreams(); n != 0 {
		t.Errorf("open streams after the end: %d", n)
	}
}
