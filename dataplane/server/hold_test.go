package server

import (
	"sync"
	"testing"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/snapshot"
)

// TestHoldMaxPriceCapsBalance: with hold_max_price in an account's limits, requests arriving
// at once are admitted only while the balance covers their maximum prices, so the balance
// never goes below zero on the node; without it, a positive balance admits them all and
// they take it far below zero.
func TestHoldMaxPriceCapsBalance(t *testing.T) {
	const (
		balance = 500_000 // micro-SEK
		n       = 16
		// Each request may cost 8,192 prompt tokens at 15 SEK/M plus 2,000 output tokens
		// at 60 SEK/M: 242,880 micro-SEK; it costs about 120,000 (2,000 tokens generated).
		req = `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"max_tokens":2000}`
	)
	for _, hold := range []bool{false, true} {
		up := startSim(t, "up", simulator.Knobs{OutputTokens: 2000, LatencyMS: 300})
		g := startSimGateway(t, []snapshot.Route{chatRoute("a", "p", up.BaseURL(), "SE", 0, 1)})
		s := *g.Snap
		s.Version++
		s.Accounts = append([]snapshot.Account(nil), g.Snap.Accounts...)
		for i := range s.Accounts {
			if s.Accounts[i].ID == fixture.AcctSE {
				s.Accounts[i].Limits = &snapshot.Limits{MaxConcurrent: 100, HoldMaxPrice: hold}
			}
		}
		x, err := index.Build(&s)
		if err != nil {
			t.Fatal(err)
		}
		g.Store.Swap(x)
		g.Meter.SeedBalances([]snapshot.Balance{{AccountID: fixture.AcctSE, MicroSEK: balance}}, s.BalanceSeq+1)

		var wg sync.WaitGroup
		statuses := make([]int, n)
		for i := range n {
			wg.Go(func() { statuses[i] = g.post(t, g.Keys.SE, req).Status })
		}
		wg.Wait()
		served := 0
		for _, st := range statuses {
			switch st {
			case 200:
				served++
			case 402:
			default:
				t.Fatalf("hold=%v: status %d", hold, st)
			}
		}
		left := g.Meter.Spendable(fixture.AcctSE)
		t.Logf("hold=%v: %d of %d served, balance left %d micro-SEK", hold, served, n, left)
		if hold && (left < 0 || served < 1 || served > 2) {
			t.Fatalf("with the hold: %d served, balance %d; want 1 or 2 served and the balance not below zero", served, left)
		}
		if !hold && left >= 0 {
			t.Fatalf("without the hold the balance stayed at %d: the test does not overspend", left)
		}
	}
}
