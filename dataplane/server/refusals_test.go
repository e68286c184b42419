package server

import (
	"testing"

	"github.com/sekgate/gateway/dataplane/refusals"
)

// Requests refused after authentication and before routing are counted per account, key,
// status and code; answered requests and unauthenticated ones are not.
func TestRefusalsCounted(t *testing.T) {
	c := refusals.New(nil)
	g := startGateway(t, func(cfg *Config) { cfg.Refusals = c })
	for _, r := range []struct {
		key, body string
		status    int
	}{
		{g.Keys.Broke, chatBody, 402},
		{g.Keys.Broke, chatBody, 402},
		{g.Keys.SE, `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}`, 404},
		{g.Keys.SE, chatBody, 200},
		{"sgw_nope", chatBody, 401},
	} {
		if got := g.do(t, "POST", "/v1/chat/completions", r.key, r.body); got.Status != r.status {
			t.Fatalf("status %d, want %d: %s", got.Status, r.status, got.Body)
		}
	}
	got := map[string]int64{}
	for _, e := range refusals.Take(c) {
		got[e.KeyID+" "+e.Code] += e.Count
		if e.Status != 402 && e.Status != 404 {
			t.Errorf("counted %+v", e)
		}
	}
	if got[g.Keys.IDs["broke"]+" insufficient_quota"] != 2 || got[g.Keys.IDs["se"]+" model_not_found"] != 1 || len(got) != 2 {
		t.Fatalf("counts %v (ids %v)", got, g.Keys.IDs)
	}
}
