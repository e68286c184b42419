package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/snapshot"
)

// setIsolation rebuilds the served index with the chat model's cache_isolation set to v.
func setIsolation(t *testing.T, snap *snapshot.Snapshot, store *index.Store, v string) *index.Index {
	t.Helper()
	for i := range snap.Models {
		if snap.Models[i].ID == fixture.ModelChat {
			snap.Models[i].CacheIsolation = v
		}
	}
	x, err := index.Build(snap)
	if err != nil {
		t.Fatal(err)
	}
	store.Swap(x)
	return x
}

// promptOf is a chat request whose system prompt is 64 words of the given seed (four of the
// simulator's 16-token blocks) followed by a user question; salt, when set, is sent as the
// client's own cache_salt.
func promptOf(seed, question, salt string) string {
	w := make([]string, 64)
	for i := range w {
		w[i] = fmt.Sprintf("%s%d", seed, i)
	}
	b := `{"model":"llama8b","max_tokens":2,"messages":[{"role":"system","content":"` + strings.Join(w, " ") +
		`"},{"role":"user","content":"` + question + `"}]`
	if salt != "" {
		b += `,"cache_salt":"` + salt + `"`
	}
	return b + `}`
}

// The cross-account timing probe: account A's system prompt is cached on a vLLM-like
// server; account B sends a right and a wrong guess of it. With account isolation the
// right guess hits no more of the prefix cache than the wrong one (so its first event is
// no faster), even when B sends A's very salt; with shared isolation it hits. The signal
// is the server's prefix-cache hit counter, not wall time.
func TestCacheIsolationClosesCrossAccountProbe(t *testing.T) {
	for _, tc := range []struct {
		isolation string
		leaks     bool
	}{
		{"", false}, // the default: account
		{snapshot.CacheIsolationAccount, false},
		{snapshot.CacheIsolationShared, true},
	} {
		t.Run("isolation="+tc.isolation, func(t *testing.T) {
			sim := simulator.New(simulator.Config{Name: "vllm-0", Engine: simulator.EngineConfig{Slots: 4}})
			if err := sim.Start(context.Background(), "127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sim.Close() })
			rt := chatRoute("r-vllm", "sim", sim.BaseURL(), "SE", 0, 1)
			rt.Server = "vllm"
			g := startSimGateway(t, []snapshot.Route{rt})
			x := setIsolation(t, g.Snap, g.Store, tc.isolation)
			hits := func(key, body string) int64 {
				t.Helper()
				_, before := sim.PrefixCache()
				if r := g.post(t, key, body); r.Status != 200 {
					t.Fatalf("status %d: %s", r.Status, r.Body)
				}
				_, after := sim.PrefixCache()
				return after - before
			}
			a, b := g.Keys.SE, g.Keys.EU // two accounts that both reach the SE route
			if h := hits(a, promptOf("secret", "Hej", "")); h != 0 {
				t.Fatalf("A's first request hit %d cached tokens on a cold server", h)
			}
			// The salt is stable: A's own next request reuses its cached prefix.
			if h := hits(a, promptOf("secret", "Hallå", "")); h < 64 {
				t.Fatalf("A's second request hit %d cached tokens, want its 64-token system prompt", h)
			}
			hits(a, promptOf("other", "Hej", ""))
			wrong := hits(b, promptOf("guess", "Hej", ""))
			right := hits(b, promptOf("secret", "Hej", ""))
			if wrong != 0 {
				t.Fatalf("wrong guess hit %d cached tokens", wrong)
			}
			if tc.leaks {
				if right < 64 {
					t.Fatalf("shared: right guess hit %d cached tokens, want A's 64-token prefix", right)
				}
				return
			}
			if right != wrong {
				t.Fatalf("account isolation: right guess hit %d cached tokens, wrong guess %d", right, wrong)
			}
			// Even knowing A's salt, B cannot send it: the node overwrites a client's
			// cache_salt with the account's own.
			acctA, _ := x.Account(fixture.AcctSE)
			if forged := hits(b, promptOf("other", "Hej", acctA.CacheSalt)); forged != 0 {
				t.Fatalf("a right guess with A's salt as cache_salt hit %d cached tokens", forged)
			}
		})
	}
}
