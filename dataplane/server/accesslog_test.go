package server

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/accesslog"
	"github.com/sekgate/gateway/internal/syncbuf"
)

// One JSON line per inference request, routed or refused, with identifiers, route,
// outcome, usage, price and timings; never the key's secret or the content.
func TestAccessLog(t *testing.T) {
	var buf syncbuf.Buffer
	log := accesslog.New(accesslog.Config{Writer: &buf, JSON: true, FlushInterval: time.Hour})
	g := startGateway(t, func(c *Config) { c.AccessLog = log; c.Region = "se-sto" })
	if r := g.do(t, "POST", "/v1/chat/completions", g.Keys.SE, chatBody); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	g.do(t, "POST", "/v1/chat/completions", "", chatBody)    // refused: no key
	g.do(t, "GET", "/v1/models", g.Keys.SE, "")              // not an inference request
	g.do(t, "POST", "/v1/chat/completions", g.Keys.SE, "{}") // refused: invalid body
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, g.Keys.SE) || strings.Contains(out, "Hej") {
		t.Fatalf("the access log holds a secret or content:\n%s", out)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not JSON: %q", sc.Text())
		}
		lines = append(lines, m)
	}
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), out)
	}
	rec := g.Meter.Records()[0]
	ok := lines[0]
	for k, want := range map[string]any{"msg": "request", "request_id": rec.RequestID, "key_id": *rec.KeyID, "account_id": rec.AccountID,
		"endpoint": "/v1/chat/completions", "model": rec.Model, "provider": rec.Provider, "route": rec.Routing.Attempts[0].Route,
		"node_region": "se-sto", "status": 200.0, "result": "ok", "prompt_tokens": float64(rec.PromptTokens),
		"completion_tokens": float64(rec.CompletionTokens), "price_micro_sek": float64(rec.PriceMicroSEK), "attempts": 1.0} {
		if ok[k] != want {
			t.Errorf("%s = %v, want %v", k, ok[k], want)
		}
	}
	if d, _ := ok["duration_ms"].(float64); d <= 0 {
		t.Errorf("duration_ms %v", ok["duration_ms"])
	}
	if l := lines[1]; l["result"] != "refused" || l["status"] != 401.0 || l["error"] == nil {
		t.Errorf("refusal line %v", l)
	}
	if l := lines[2]; l["result"] != "refused" || l["status"] != 400.0 {
		t.Errorf("invalid body line %v", l)
	}
}

// Sampling drops successful requests only.
func TestAccessLogSampling(t *testing.T) {
	var buf syncbuf.Buffer
	log := accesslog.New(accesslog.Config{Writer: &buf, Sample: -1, FlushInterval: time.Hour})
	g := startGateway(t, func(c *Config) { c.AccessLog = log })
	g.do(t, "POST", "/v1/chat/completions", g.Keys.SE, chatBody)
	g.do(t, "POST", "/v1/chat/completions", "", chatBody)
	log.Close()
	if out := buf.String(); strings.Count(out, "msg=request") != 1 || !strings.Contains(out, "result=refused") {
		t.Fatalf("want only the refusal, in text:\n%s", out)
	}
}
