package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

func TestBudgetsSpendPerPeriod(t *testing.T) {
	t.Parallel()
	// The store's clock is the real one: records need partitions of their days.
	now := time.Now().UTC()
	s := newStore(t)
	ctx := context.Background()
	acct := fundedAccounts(t, s, 1)[0]
	k1, _, err := s.CreateKey(ctx, acct, "daily", nil)
	if err != nil {
		t.Fatal(err)
	}
	k2, _, err := s.CreateKey(ctx, acct, "uncapped", nil)
	if err != nil {
		t.Fatal(err)
	}
	if old, err := s.SetAccountBudget(ctx, acct, &snapshot.Budget{Period: snapshot.PeriodMonth, LimitMicroSEK: 5_000_000}); err != nil || old != nil {
		t.Fatalf("set account budget: old %v, err %v", old, err)
	}
	if _, err := s.SetKeyBudget(ctx, k1.ID, &snapshot.Budget{Period: snapshot.PeriodDay, LimitMicroSEK: 1_000_000}); err != nil {
		t.Fatal(err)
	}
	// Records of today, yesterday and last month, on both keys.
	dayStart, monthStart := snapshot.PeriodStart(snapshot.PeriodDay, now), snapshot.PeriodStart(snapshot.PeriodMonth, now)
	at := func(id string, key *string, ts time.Time) usage.Record {
		r := record(id, acct, ts, 1000, 1000) // 4,500 micro-SEK
		r.KeyID = key
		return r
	}
	recs := []usage.Record{
		at("req_001", &k1.ID, now.Add(-time.Minute)),
		at("req_002", &k1.ID, dayStart.Add(-time.Minute)), // yesterday
		at("req_003", &k2.ID, now.Add(-time.Minute)),
		at("req_004", &k1.ID, monthStart.Add(-time.Minute)), // last month
	}
	reply, err := s.IngestBatch(ctx, usage.Batch{NodeID: "n1", BatchID: "b1", Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	const p = 4500
	var inMonth int64
	for _, r := range recs {
		if !r.TS.Before(monthStart) {
			inMonth += p
		}
	}
	wantSpent := []snapshot.Spent{
		{AccountID: acct, From: monthStart, MicroSEK: inMonth},
		{AccountID: acct, KeyID: k1.ID, From: dayStart, MicroSEK: p},
	}
	checkSpent := func(what string, got []snapshot.Spent) {
		t.Helper()
		if len(got) != len(wantSpent) {
			t.Fatalf("%s: spent %+v, want %+v", what, got, wantSpent)
		}
		for i := range got {
			if got[i].AccountID != wantSpent[i].AccountID || got[i].KeyID != wantSpent[i].KeyID ||
				!got[i].From.Equal(wantSpent[i].From) || got[i].MicroSEK != wantSpent[i].MicroSEK {
				t.Errorf("%s: spent[%d] = %+v, want %+v", what, i, got[i], wantSpent[i])
			}
		}
	}
	if reply.Inserted != len(recs) {
		rej, _, _ := s.ListRejected(ctx, 10)
		t.Fatalf("reply %+v %+v", reply, rej)
	}
	checkSpent("usage reply", reply.Spent)

	upd, err := s.BalanceChangesIn(ctx, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	checkSpent("balance watch", upd.Spent)

	snap, err := s.CompileSnapshot(ctx, snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	checkSpent("snapshot", snap.Spent)
	if snap.Accounts[0].Budget == nil || snap.Accounts[0].Budget.LimitMicroSEK != 5_000_000 {
		t.Errorf("snapshot account budget %+v", snap.Accounts[0].Budget)
	}
	for _, k := range snap.Keys {
		if (k.Budget != nil) != (k.ID == k1.ID) {
			t.Errorf("snapshot key %s budget %+v", k.ID, k.Budget)
		}
	}

	st, err := s.Budgets(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 2 || st[0].KeyID != "" || st[0].SpentMicroSEK != inMonth || st[1].KeyID != k1.ID ||
		st[1].SpentMicroSEK != p || st[1].KeyName != "daily" || !st[1].Until.Equal(dayStart.AddDate(0, 0, 1)) {
		t.Errorf("budgets %+v", st)
	}

	// Clearing returns the budget it replaced; the snapshot then has no spend to carry.
	old, err := s.SetAccountBudget(ctx, acct, nil)
	if err != nil || old == nil || *old != (snapshot.Budget{Period: snapshot.PeriodMonth, LimitMicroSEK: 5_000_000}) {
		t.Fatalf("clear: old %+v, err %v", old, err)
	}
	if _, err := s.SetKeyBudget(ctx, k1.ID, nil); err != nil {
		t.Fatal(err)
	}
	if snap, err = s.CompileSnapshot(ctx, snapshot.Limits{}); err != nil || len(snap.Spent) != 0 {
		t.Fatalf("after clearing: spent %+v, err %v", snap.Spent, err)
	}
}

func TestSetBudgetRefusals(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	acct := fundedAccounts(t, s, 1)[0]
	tests := []struct {
		name string
		set  func() error
		want error
	}{
		{"unknown period", func() error {
			_, err := s.SetAccountBudget(ctx, acct, &snapshot.Budget{Period: "year", LimitMicroSEK: 1})
			return err
		}, store.ErrInvalid},
		{"zero limit", func() error {
			_, err := s.SetAccountBudget(ctx, acct, &snapshot.Budget{Period: "day"})
			return err
		}, store.ErrInvalid},
		{"unknown account", func() error {
			_, err := s.SetAccountBudget(ctx, "acct_0000000000000000", &snapshot.Budget{Period: "day", LimitMicroSEK: 1})
			return err
		}, store.ErrNotFound},
		{"unknown key", func() error {
			_, err := s.SetKeyBudget(ctx, "key_000000000000", nil)
			return err
		}, store.ErrNotFound},
		{"budgets of unknown account", func() error {
			_, err := s.Budgets(ctx, "acct_0000000000000000")
			return err
		}, store.ErrNotFound},
	}
	for _, tc := range tests {
		if err := tc.set(); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
}
