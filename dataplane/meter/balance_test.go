package meter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

func TestBalanceMath(t *testing.T) {
	type step struct {
		do   func(b *balances)
		want int64 // Spendable("a") after the step
	}
	seed := func(micro, seq int64) func(*balances) {
		return func(b *balances) { b.apply([]snapshot.Balance{{AccountID: "a", MicroSEK: micro}}, nil, seq, true) }
	}
	watch := seed
	spend := func(amt int64) func(*balances) { return func(b *balances) { b.addUnconfirmed("a", amt) } }
	reply := func(spent int64, bals []snapshot.Balance, seq int64) func(*balances) {
		return func(b *balances) { b.confirm(map[string]int64{"a": spent}, bals, nil, seq) }
	}
	bal := func(micro int64) []snapshot.Balance { return []snapshot.Balance{{AccountID: "a", MicroSEK: micro}} }
	tests := []struct {
		name  string
		steps []step
	}{
		{"unknown account has nothing", []step{{func(*balances) {}, 0}}},
		{"seed", []step{{seed(1000, 5), 1000}}},
		{"record subtracts at once", []step{{seed(1000, 5), 1000}, {spend(300), 700}, {spend(200), 500}}},
		{"reply replaces spend by debited balance", []step{
			{seed(1000, 5), 1000}, {spend(300), 700}, {spend(200), 500},
			{reply(300, bal(700), 6), 500}, {reply(200, bal(500), 7), 500},
		}},
		{"spend beyond balance goes negative", []step{{seed(100, 1), 100}, {spend(250), -150}, {reply(250, bal(-150), 2), -150}}},
		{"stale watch update ignored", []step{{seed(1000, 10), 1000}, {watch(5000, 9), 1000}, {watch(5000, 10), 1000}, {watch(5000, 11), 5000}}},
		{"top-up while spend unconfirmed", []step{{seed(1000, 5), 1000}, {spend(400), 600}, {watch(11000, 6), 10600}, {reply(400, bal(10600), 7), 10600}}},
		{"reply older than watch keeps newer balance", []step{
			// The batch committed at seq 6; a watch answer as of seq 8 (debit and a top-up
			// included) arrived before the reply.
			{seed(1000, 5), 1000}, {spend(400), 600}, {watch(10600, 8), 10200},
			{reply(400, bal(600), 6), 10600},
		}},
		{"reply without the account holds the spend until a newer balance", []step{
			{seed(1000, 5), 1000}, {spend(400), 600},
			// A balance as of seq 8 predates the batch's commit at 9: the spend stays held.
			{reply(400, nil, 9), 600}, {watch(1000, 8), 600}, {watch(600, 9), 600}, {spend(100), 500},
		}},
		{"reply without the account, then newer balance releases", []step{
			{seed(1000, 5), 1000}, {spend(400), 600}, {reply(400, nil, 9), 600}, {watch(900, 10), 900},
		}},
		{"reply without sequence is not trusted to include the debit", []step{
			{seed(1000, 5), 1000}, {spend(400), 600}, {reply(400, bal(600), 0), 600}, {watch(600, 6), 600},
		}},
		{"recovered spend before any balance", []step{{spend(70), -70}, {seed(1000, 3), 930}, {reply(70, bal(930), 4), 930}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBalances()
			for i, s := range tt.steps {
				s.do(b)
				if got := b.spendable("a"); got != s.want {
					t.Fatalf("step %d: Spendable = %d, want %d (state %+v)", i, got, s.want, b.view("a"))
				}
			}
		})
	}
}

// TestOverspendBound runs concurrent "requests" that check Spendable, take some time and
// Record a random price, against a fake control plane, and checks the documented bound:
// the final ledger balance is never below -(concurrency × max price).
func TestOverspendBound(t *testing.T) {
	const (
		start       = 20_000_000 // 20 SEK
		maxPrice    = 200_000    // 0.20 SEK
		concurrency = 24
	)
	tests := []struct {
		name  string
		setup func(cp *fakeCP)
		mid   func(cp *fakeCP)
	}{
		{"fast control plane", func(*fakeCP) {}, nil},
		{"slow control plane", func(cp *fakeCP) { cp.delay.Store(int64(15 * time.Millisecond)) }, nil},
		{"control plane down during the run", func(cp *fakeCP) { cp.down.Store(true) }, func(cp *fakeCP) { cp.down.Store(false) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := newFakeCP(t)
			cp.credit("acct_a", start)
			tt.setup(cp)
			m := newMeter(t, testConfig(t, cp.srv.URL, t.TempDir()))
			bals, seq := cp.snapshotBalances()
			m.SeedBalances(bals, seq)
			run(t, m)

			var ids atomic.Int64
			var spent atomic.Int64
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			for range concurrency {
				wg.Go(func() {
					for ctx.Err() == nil {
						if m.Spendable("acct_a") <= 0 {
							// The view is exact once the spool is empty: the account is
							// exhausted.
							exhausted := func() bool { return m.Stats().SpoolRecords == 0 }
							poll.Wait(time.Second, func() bool { return exhausted() || m.Spendable("acct_a") > 0 })
							if exhausted() && m.Spendable("acct_a") <= 0 {
								return
							}
							continue
						}
						requestRuns()
						price := 1 + rand.Int64N(maxPrice)
						id := ids.Add(1)
						m.Record(&usage.Record{RequestID: fmt.Sprintf("req_%d", id), TS: time.Now().UTC(),
							AccountID: "acct_a", Model: "m", Endpoint: "/v1/chat/completions", Status: 200,
							Result: usage.ResultOK, PriceMicroSEK: price})
						spent.Add(price)
					}
				})
			}
			if tt.mid != nil { // once the node has spent the account with the control plane away
				poll.Until(t, 10*time.Second, "the account spent", func() bool { return m.Spendable("acct_a") <= 0 })
				tt.mid(cp)
			}
			wg.Wait()
			if ctx.Err() != nil {
				t.Fatal("requests did not exhaust the balance in time")
			}
			n := int(ids.Load())
			eventually(t, 10*time.Second, "all records delivered", func() bool { return cp.count() == n })
			final := cp.balance("acct_a")
			t.Logf("%d requests, final balance %d micro-SEK (bound %d)", n, final, -concurrency*maxPrice)
			if final < -concurrency*maxPrice {
				t.Fatalf("final balance %d below the bound -C×Pmax = %d", final, -concurrency*maxPrice)
			}
			if final > 0 {
				t.Fatalf("requests stopped with %d micro-SEK left", final)
			}
			if got := start - final; got != spent.Load() {
				t.Fatalf("ledger debited %d, records priced %d", got, spent.Load())
			}
			eventually(t, 10*time.Second, "view matches ledger", func() bool { return m.Spendable("acct_a") == final })
		})
	}
}

// TestHold: a hold is taken only when the spendable balance covers it, counts as spend
// until released, and a release gives it back whole.
func TestHold(t *testing.T) {
	b := newBalances()
	if b.hold("a", 1) {
		t.Fatal("held on an account without a known balance")
	}
	b.apply([]snapshot.Balance{{AccountID: "a", MicroSEK: 1000}}, nil, 1, true)
	if !b.hold("a", 600) || b.spendable("a") != 400 {
		t.Fatalf("first hold: spendable %d", b.spendable("a"))
	}
	if b.hold("a", 600) {
		t.Fatal("a hold past the balance was taken")
	}
	b.addUnconfirmed("a", 350) // a record priced while the hold stands
	b.addUnconfirmed("a", -600)
	if b.spendable("a") != 650 || !b.hold("a", 650) || b.hold("a", 1) {
		t.Fatalf("after release: spendable %d", b.spendable("a"))
	}
}
