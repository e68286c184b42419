package server

import (
	"sync"
	"testing"
)

// refusalLog keeps every refusal the server counts.
type refusalLog struct {
	mu  sync.Mutex
	n   map[string]int64 // "key code" -> count
	bad []int            // statuses other than 402 and 404
}

func (l *refusalLog) Add(_, key string, status int, code string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n[key+" "+code]++
	if status != 402 && status != 404 {
		l.bad = append(l.bad, status)
	}
}

// Requests refused after authentication and before routing are counted per account, key,
// status and code; answered requests and unauthenticated ones are not.
func TestRefusalsCounted(t *testing.T) {
	c := &refusalLog{n: map[string]int64{}}
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
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.n
	if len(c.bad) > 0 {
		t.Errorf("counted statuses %v", c.bad)
	}
	if got[g.Keys.IDs["broke"]+" insufficient_quota"] != 2 || got[g.Keys.IDs["se"]+" model_not_found"] != 1 || len(got) != 2 {
		t.Fatalf("counts %v (ids %v)", got, g.Keys.IDs)
	}
}
