package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/money"
)

// The overview lists the active accounts under the threshold, lowest first; suspended
// accounts and those at or over it are left out.
func TestOverviewLowBalances(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	yes := true
	mk := func(name string, sek int64, suspended bool) string {
		a, err := s.CreateAccount(ctx, name, "se")
		if err != nil {
			t.Fatal(err)
		}
		if sek != 0 {
			if _, err := s.AddAdjustment(ctx, a.ID, sek*money.MicroPerSEK, "test"); err != nil {
				t.Fatal(err)
			}
		}
		if suspended {
			if _, err := s.UpdateAccount(ctx, a.ID, store.AccountPatch{Suspended: &yes}); err != nil {
				t.Fatal(err)
			}
		}
		return a.ID
	}
	ten, zero := mk("Ten AB", 10, false), mk("Zero AB", 0, false)
	mk("Rich AB", 500, false)
	mk("Exactly AB", 50, false)
	mk("Suspended AB", 1, true)
	o, err := s.Overview(ctx, time.Now(), 50*money.MicroPerSEK, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.LowBalance) != 2 || o.LowBalance[0].ID != zero || o.LowBalance[1].ID != ten ||
		o.LowBalance[1].BalanceMicroSEK != 10*money.MicroPerSEK {
		t.Fatalf("low balances %+v", o.LowBalance)
	}
}
