package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/snapshot"
)

// An account's fair-queue weight: 1 by default, set on creation or by a patch, refused
// outside 1..100 by the database, and carried in the snapshot (left out when 1).
func TestAccountQueueWeight(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()

	plain, err := s.CreateAccount(ctx, "plain", "se")
	if err != nil || plain.QueueWeight != 1 {
		t.Fatalf("default weight: %+v, %v", plain, err)
	}
	heavy, err := s.CreateAccountWith(ctx, store.NewAccount{Customer: "heavy", Residency: "se", QueueWeight: 3})
	if err != nil || heavy.QueueWeight != 3 {
		t.Fatalf("created with weight 3: %+v, %v", heavy, err)
	}
	for _, w := range []int{0, -1, 101} {
		if w != 0 { // 0 is the default when creating, not when patching
			if _, err := s.CreateAccountWith(ctx, store.NewAccount{Customer: "bad", Residency: "se", QueueWeight: w}); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("created with weight %d: %v", w, err)
			}
		}
		if _, err := s.UpdateAccount(ctx, plain.ID, store.AccountPatch{QueueWeight: &w}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("patched to weight %d: %v", w, err)
		}
	}
	v1, err := s.CompileSnapshot(ctx, snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	weights := func(snap *snapshot.Snapshot) map[string]int {
		out := map[string]int{}
		for _, a := range snap.Accounts {
			out[a.Customer] = a.QueueWeight
		}
		return out
	}
	if w := weights(v1); w["plain"] != 0 || w["heavy"] != 3 {
		t.Fatalf("snapshot weights %v", w)
	}

	hundred := 100
	got, err := s.UpdateAccount(ctx, plain.ID, store.AccountPatch{QueueWeight: &hundred})
	if err != nil || got.QueueWeight != 100 {
		t.Fatalf("patched to 100: %+v, %v", got, err)
	}
	yes := true
	if got, err = s.UpdateAccount(ctx, plain.ID, store.AccountPatch{Suspended: &yes}); err != nil || got.QueueWeight != 100 {
		t.Fatalf("a patch without weight changed it: %+v, %v", got, err)
	}
	list, err := s.ListAccounts(ctx)
	if err != nil || len(list) != 2 || list[0].QueueWeight != 100 || list[1].QueueWeight != 3 {
		t.Fatalf("listed %+v, %v", list, err)
	}
	v2, err := s.CompileSnapshot(ctx, snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if w := weights(v2); w["plain"] != 100 || v2.Version <= v1.Version {
		t.Fatalf("after the patch: weights %v, version %d after %d", w, v2.Version, v1.Version)
	}
}
