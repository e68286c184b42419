package server

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/cplink"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/dataplane/meter"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/snapshot"
)

// With the node's own meter (dataplane/meter, its spend unconfirmed: nothing is sent), an
// account's budget and a key's admit requests until their spend reaches the limit, then
// answer 402 budget_exceeded naming the budget and its reset; another key of the account
// is held only to the account's budget.
func TestBudgetExceeded(t *testing.T) {
	tests := []struct {
		name      string
		acct, key *snapshot.Budget
		whose     string
	}{
		{"account budget", &snapshot.Budget{Period: snapshot.PeriodMonth, LimitMicroSEK: 1}, nil, "the account's budget of 0.000001 SEK per month"},
		{"key budget", nil, &snapshot.Budget{Period: snapshot.PeriodDay, LimitMicroSEK: 1}, "this API key's ("},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			up := newFakeUpstream(t)
			now := time.Now()
			snap, ks := fixture.Snapshot(1, up.URL+"/v1", now)
			for i := range snap.Accounts {
				if snap.Accounts[i].ID == fixture.AcctSE {
					snap.Accounts[i].Budget = tc.acct
				}
			}
			for i := range snap.Keys {
				if snap.Keys[i].ID == ks.IDs["se"] {
					snap.Keys[i].Budget = tc.key
				}
			}
			// A second key of the account, without a budget of its own.
			id2, secret2, hash2, err := apikey.New()
			if err != nil {
				t.Fatal(err)
			}
			snap.Keys = append(snap.Keys, snapshot.Key{ID: id2, AccountID: fixture.AcctSE, Hash: hash2})
			link, err := cplink.New(cplink.Config{URL: "http://127.0.0.1:9", NodeID: "node-t", NodeToken: strings.Repeat("t", 32)})
			if err != nil {
				t.Fatal(err)
			}
			m, err := meter.New(meter.Config{DataDir: t.TempDir(), Link: link, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			m.SeedBalances(snap.Balances, snap.BalanceSeq)
			store := &index.Store{}
			x, err := index.Build(snap)
			if err != nil {
				t.Fatal(err)
			}
			store.Swap(x)
			srv, err := New(Config{Store: store, Meter: m, Pool: proxy.NewPool(proxy.Config{FirstByteTimeout: 300 * time.Millisecond})})
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go srv.Serve(ln)
			t.Cleanup(func() { _ = srv.Shutdown() })
			g := &gateway{URL: "http://" + ln.Addr().String(), Store: store, Keys: ks, Up: up, Srv: srv, Snap: snap}

			if r := g.do(t, "POST", "/v1/chat/completions", ks.SE, chatBody); r.Status != 200 {
				t.Fatalf("first request: %d %s", r.Status, r.Body)
			}
			r := g.do(t, "POST", "/v1/chat/completions", ks.SE, chatBody)
			checkEnvelope(t, r, 402, "budget_exceeded")
			msg := gjson.Get(r.Body, "error.message").String()
			if gjson.Get(r.Body, "error.type").String() != "insufficient_quota" || !strings.Contains(msg, tc.whose) || !strings.Contains(msg, "it resets at ") {
				t.Fatalf("refusal %s", r.Body)
			}
			// A key's budget holds that key only; the account's budget every key of it.
			other := g.do(t, "POST", "/v1/chat/completions", secret2, chatBody)
			if want := map[bool]int{true: 200, false: 402}[tc.key != nil]; other.Status != want {
				t.Fatalf("the account's other key: %d, want %d: %s", other.Status, want, other.Body)
			}
		})
	}
}
