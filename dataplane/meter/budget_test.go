package meter

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/cplink"
	"github.com/sekgate/gateway/shared/snapshot"
)

func TestBudgetLeft(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	month := &snapshot.Budget{Period: snapshot.PeriodMonth, LimitMicroSEK: 1000}
	day := &snapshot.Budget{Period: snapshot.PeriodDay, LimitMicroSEK: 1000}
	nov1, nov28, oct1 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	spent := func(id string, from time.Time, micro, seq int64) func(*balances) {
		return func(b *balances) {
			x := snapshot.Spent{AccountID: "acct_a", From: from, MicroSEK: micro}
			if isKey(id) {
				x.KeyID = id
			}
			b.apply(nil, []snapshot.Spent{x}, seq, false)
		}
	}
	spend := func(id string, amt int64) func(*balances) { return func(b *balances) { b.addUnconfirmed(id, amt) } }
	confirm := func(id string, amt int64, sp []snapshot.Spent, seq int64) func(*balances) {
		return func(b *balances) { b.confirm(map[string]int64{id: amt}, nil, sp, seq) }
	}
	tests := []struct {
		name   string
		id     string
		budget *snapshot.Budget
		steps  []func(*balances)
		want   int64
	}{
		{"nothing known", "acct_a", month, nil, 1000},
		{"known spend", "acct_a", month, []func(*balances){spent("acct_a", nov1, 300, 5)}, 700},
		{"known plus unconfirmed", "acct_a", month, []func(*balances){spent("acct_a", nov1, 300, 5), spend("acct_a", 200)}, 500},
		{"spend of an ended period counts 0", "acct_a", month, []func(*balances){spent("acct_a", oct1, 900, 5)}, 1000},
		{"older spend ignored", "acct_a", month, []func(*balances){spent("acct_a", nov1, 300, 5), spent("acct_a", nov1, 100, 4)}, 700},
		{"a day's spend against a daily budget", "key_000000000001", day, []func(*balances){spent("key_000000000001", nov28, 999, 2)}, 1},
		{"key spend confirmed with its spend", "key_000000000001", day, []func(*balances){
			spent("key_000000000001", nov28, 100, 2), spend("key_000000000001", 400),
			confirm("key_000000000001", 400, []snapshot.Spent{{AccountID: "acct_a", KeyID: "key_000000000001", From: nov28, MicroSEK: 500}}, 3),
		}, 500},
		{"key spend confirmed without spend stays held", "key_000000000001", day, []func(*balances){
			spent("key_000000000001", nov28, 100, 2), spend("key_000000000001", 400), confirm("key_000000000001", 400, nil, 3),
		}, 500},
		{"held key spend released by newer spend", "key_000000000001", day, []func(*balances){
			spent("key_000000000001", nov28, 100, 2), spend("key_000000000001", 400), confirm("key_000000000001", 400, nil, 3),
			spent("key_000000000001", nov28, 500, 3),
		}, 500},
		{"a key's confirmed spend is not held before its spend is known", "key_000000000002", day, []func(*balances){
			spend("key_000000000002", 400), confirm("key_000000000002", 400, nil, 3),
		}, 1000},
		{"over the limit", "acct_a", month, []func(*balances){spent("acct_a", nov1, 900, 5), spend("acct_a", 250)}, -150},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBalances()
			for _, st := range tc.steps {
				st(b)
			}
			if got := b.budgetLeft(tc.id, tc.budget, now); got != tc.want {
				t.Errorf("left = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestOverBudgetMessage(t *testing.T) {
	cp := newFakeCP(t)
	cfg := testConfig(t, cp.srv.URL, t.TempDir())
	cfg.Now = func() time.Time { return time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC) }
	m := newMeter(t, cfg)
	acct := &snapshot.Budget{Period: snapshot.PeriodMonth, LimitMicroSEK: 2_500_000}
	key := &snapshot.Budget{Period: snapshot.PeriodDay, LimitMicroSEK: 1_000_000}
	if err := m.OverBudget("acct_a", acct, "key_000000000001", key); err != nil {
		t.Fatalf("fresh budgets refused: %v", err)
	}
	r := mkRecord(1, "acct_a", 1_000_000)
	k := "key_000000000001"
	r.KeyID = &k
	m.Record(r)
	err := m.OverBudget("acct_a", acct, k, key)
	var be *BudgetExceeded
	if !errors.As(err, &be) || be.KeyID != k {
		t.Fatalf("after the key's budget: %v", err)
	}
	want := "this API key's (key_000000000001) budget of 1.00 SEK per day is used up; it resets at 2026-11-29T00:00:00Z"
	if err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
	m.Record(mkRecord(3, "acct_a", 1_500_000)) // i%3 == 0: no key
	err = m.OverBudget("acct_a", acct, "", nil)
	if !errors.As(err, &be) || be.KeyID != "" || err.Error() != "the account's budget of 2.50 SEK per month is used up; it resets at 2026-12-01T00:00:00Z" {
		t.Errorf("account budget: %v", err)
	}
}

// TestBudgetOvershootBound admits requests from many goroutines at once, as the server
// does (OverBudget, then Record when the request ends), while batches are confirmed by
// the control plane, and checks the bound of budget.go: the spend ends within
// C × Pmax of the limit, C the requests in flight at once.
func TestBudgetOvershootBound(t *testing.T) {
	cp := newFakeCP(t)
	const acct, key = "acct_b", "key_0000000000bb"
	cp.capSpend(acct, "")
	cp.capSpend(acct, key)
	cp.credit(acct, 1<<40)
	m := newMeter(t, testConfig(t, cp.srv.URL, t.TempDir()))
	run(t, m)
	tests := []struct {
		name       string
		acct, key  *snapshot.Budget
		keyID      string
		limit      int64
		goroutines int
		price      int64
	}{
		{"key budget", nil, &snapshot.Budget{Period: snapshot.PeriodMonth, LimitMicroSEK: 50_000}, key, 50_000, 16, 700},
		{"account budget", &snapshot.Budget{Period: snapshot.PeriodMonth, LimitMicroSEK: 200_000}, nil, "", 200_000, 16, 900},
	}
	var seq atomic.Int64
	var acctTotal atomic.Int64 // every request's price: both budgets are the account's
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var total atomic.Int64
			var wg sync.WaitGroup
			for g := 0; g < tc.goroutines; g++ {
				wg.Go(func() {
					for m.OverBudget(acct, tc.acct, tc.keyID, tc.key) == nil {
						i := int(seq.Add(1))
						r := mkRecord(i, acct, tc.price)
						r.RequestID = fmt.Sprintf("req_b%08d", i)
						r.KeyID = nil
						if tc.keyID != "" {
							k := tc.keyID
							r.KeyID = &k
						}
						total.Add(tc.price)
						acctTotal.Add(tc.price)
						m.Record(r)
					}
				})
			}
			wg.Wait()
			got := total.Load()
			if tc.keyID == "" {
				got = acctTotal.Load()
			}
			bound := tc.limit + int64(tc.goroutines)*tc.price
			if got < tc.limit || got > bound {
				t.Errorf("spend %d when the budget refused; want %d (the limit) to %d (limit + C × Pmax)", got, tc.limit, bound)
			}
			// Once the control plane confirmed every record, the node still refuses: the
			// confirmed spend replaced the unconfirmed one without a gap.
			eventually(t, 5*time.Second, "every record confirmed", func() bool {
				return cp.count() == int(seq.Load()) && m.Stats().SpoolRecords == 0
			})
			if m.OverBudget(acct, tc.acct, tc.keyID, tc.key) == nil {
				t.Error("admitted again after the spend was confirmed")
			}
			if cp.spentOf(acct) != acctTotal.Load() {
				t.Errorf("control plane has %d spent, node recorded %d", cp.spentOf(acct), acctTotal.Load())
			}
		})
	}
}

// TestBudgetReachedRefusedOnEveryNode: once one node spent an account's budget, another
// node that spent nothing refuses too, after the balance watch brings it the spend.
func TestBudgetReachedRefusedOnEveryNode(t *testing.T) {
	cp := newFakeCP(t)
	const acct = "acct_c"
	cp.capSpend(acct, "")
	cp.credit(acct, 1<<40)
	budget := &snapshot.Budget{Period: snapshot.PeriodMonth, LimitMicroSEK: 10_000}
	a := newMeter(t, testConfig(t, cp.srv.URL, t.TempDir()))
	cfgB := testConfig(t, cp.srv.URL, t.TempDir())
	linkB, err := cplink.New(cplink.Config{URL: cp.srv.URL, NodeID: "node-b", NodeToken: testToken,
		RetryWaitMin: 5 * time.Millisecond, RetryWaitMax: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cfgB.Link = linkB
	b := newMeter(t, cfgB)
	run(t, a)
	run(t, b)
	for i := 0; a.OverBudget(acct, budget, "", nil) == nil; i++ {
		a.Record(mkRecord(i*3, acct, 3_000)) // i*3: records without a key
	}
	if err := a.OverBudget(acct, budget, "", nil); err == nil {
		t.Fatal("node a admits past the budget")
	}
	eventually(t, 5*time.Second, "node b refuses the account", func() bool {
		return b.OverBudget(acct, budget, "", nil) != nil
	})
}
