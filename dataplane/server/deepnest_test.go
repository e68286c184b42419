package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
)

// TestDeeplyNestedBodies sends bodies nested far deeper than any parser's stack allows to
// every inference endpoint: each must answer a 400 (413 where the body is over the
// endpoint's limit) JSON envelope, and the process must stay alive. gjson's validator is
// recursive; before the fix, 8 MiB of "[" on count_tokens overflowed the goroutine stack,
// a fatal error no recover catches.
func TestDeeplyNestedBodies(t *testing.T) {
	g := startGateway(t)
	big := strings.Repeat("[", MaxBodySize-1)
	small := strings.Repeat("[", 100<<10)
	inObject := `{"model":"llama8b","messages":` + strings.Repeat(`[{"a":`, 20000) + `}`
	cases := []struct {
		path   string
		body   string
		status int
	}{
		{"/v1/chat/completions", big, 400},
		{"/v1/chat/completions", inObject, 400},
		{"/v1/completions", big, 400},
		{"/v1/embeddings", big, 400},
		{"/v1/responses", big, 400},
		{"/v1/responses", inObject, 400},
		{"/v1/messages", big, 400},
		{"/v1/messages", inObject, 400},
		{"/v1/messages/count_tokens", big, 400},
		{"/v1/messages/count_tokens", small, 400},
		{"/v1/messages/count_tokens", inObject, 400},
		{"/v1/systemone", small, 400},
		{"/v1/systemone", big, 413},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%d", c.path, len(c.body)), func(t *testing.T) {
			r := g.do(t, "POST", c.path, g.Keys.SE, c.body)
			checkEnvelope(t, r, c.status, "")
			if strings.HasPrefix(c.path, "/v1/messages") && !strings.HasPrefix(r.Body, `{"type":"error"`) &&
				!strings.Contains(r.Body, `"type":"error"`) {
				t.Errorf("messages path without the Messages-style envelope: %s", r.Body)
			}
		})
	}
	if r := g.do(t, "GET", "/healthz", "", ""); r.Status != 200 {
		t.Fatalf("gateway not alive after deep bodies: %+v", r)
	}
}

// TestDeeplyNestedUpstreamAnswer: a provider answering 200 with a body nested deeper than
// the parsers allow gets a 502 envelope, and the gateway survives.
func TestDeeplyNestedUpstreamAnswer(t *testing.T) {
	deep := bytes.Repeat([]byte("["), 4<<20)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(deep)
	}))
	t.Cleanup(up.Close)
	g := startGateway(t)
	snap, ks := fixture.Snapshot(2, up.URL+"/v1", time.Now())
	x, err := index.Build(snap)
	if err != nil {
		t.Fatal(err)
	}
	g.Store.Swap(x)
	g.Meter.SeedBalances(snap.Balances, snap.BalanceSeq)
	r := g.do(t, "POST", "/v1/chat/completions", ks.SE, chatBody)
	checkEnvelope(t, r, 502, "")
	if r := g.do(t, "GET", "/healthz", "", ""); r.Status != 200 {
		t.Fatalf("gateway not alive: %+v", r)
	}
}
