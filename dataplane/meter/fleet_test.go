package meter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/shared/usage"
)

// TestOverspendBoundSeveralNodes: three nodes admit one account's requests at once, each at
// most C in flight and R a second (its limits), against one control plane. The account's
// final balance stays within the bound docs/limits.md states for N nodes:
// −N×C×Pmax − (N−1)×R×D×Pmax, D the time a node's spend takes to reach the others (batch
// interval + round trip + balance watch; here at most 250 ms); the ledger debits exactly
// what the records priced, each once.
func TestOverspendBoundSeveralNodes(t *testing.T) {
	const (
		nodes       = 3
		start       = 20_000_000 // 20 SEK
		maxPrice    = 200_000    // 0.20 SEK
		concurrency = 8
		perSecond   = 400 // per node
		propagation = 250 * time.Millisecond
	)
	cp := newFakeCP(t)
	cp.credit("acct_a", start)
	var ms []*Meter
	for range nodes {
		m := newMeter(t, testConfig(t, cp.srv.URL, t.TempDir()))
		bals, seq := cp.snapshotBalances()
		m.SeedBalances(bals, seq)
		run(t, m)
		ms = append(ms, m)
	}
	var ids, spent atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for n, m := range ms {
		lim := rate.NewLimiter(perSecond, concurrency)
		for range concurrency {
			wg.Go(func() {
				for ctx.Err() == nil {
					if m.Spendable("acct_a") <= 0 {
						// Every node's spend is confirmed: the account is exhausted.
						exhausted := func() bool { return m.Stats().SpoolRecords == 0 && cp.count() == int(ids.Load()) }
						poll.Wait(time.Second, func() bool { return exhausted() || m.Spendable("acct_a") > 0 })
						if exhausted() && m.Spendable("acct_a") <= 0 {
							return
						}
						continue
					}
					if lim.Wait(ctx) != nil {
						return
					}
					requestRuns()
					price := 1 + rand.Int64N(maxPrice)
					id := ids.Add(1)
					m.Record(&usage.Record{RequestID: fmt.Sprintf("req_%d_%d", n, id), TS: time.Now().UTC(),
						AccountID: "acct_a", Model: "m", Endpoint: "/v1/chat/completions", Status: 200,
						Result: usage.ResultOK, PriceMicroSEK: price})
					spent.Add(price)
				}
			})
		}
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("requests did not exhaust the balance in time")
	}
	n := int(ids.Load())
	eventually(t, 10*time.Second, "all records delivered", func() bool { return cp.count() == n })
	final := cp.balance("acct_a")
	bound := -int64(nodes*concurrency*maxPrice) - int64((nodes-1)*perSecond)*maxPrice*int64(propagation)/int64(time.Second)
	t.Logf("%d requests on %d nodes, final balance %d micro-SEK (bound %d)", n, nodes, final, bound)
	if final < bound {
		t.Fatalf("final balance %d below the bound %d", final, bound)
	}
	if final > 0 {
		t.Fatalf("requests stopped with %d micro-SEK left", final)
	}
	if got := start - final; got != spent.Load() {
		t.Fatalf("ledger debited %d, records priced %d", got, spent.Load())
	}
	for i, m := range ms {
		eventually(t, 10*time.Second, fmt.Sprintf("node %d's view matches the ledger", i), func() bool { return m.Spendable("acct_a") == final })
	}
}
