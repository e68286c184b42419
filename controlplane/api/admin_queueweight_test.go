package api_test

import (
	"testing"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

// An account's fair-queue weight is set on creation and by a patch, shown on every read,
// and reaches the nodes' snapshot; an account created without one weighs 1.
func TestAdminAccountQueueWeight(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var plain, heavy adminapi.Account
	e.mustStatus(e.admin("POST", "/admin/v1/accounts", map[string]string{"customer": "Plain AB", "residency": "se"}), 201).json(t, &plain)
	e.mustStatus(e.admin("POST", "/admin/v1/accounts", map[string]any{"customer": "Heavy AB", "residency": "se", "queue_weight": 3}), 201).json(t, &heavy)
	if plain.QueueWeight != 1 || heavy.QueueWeight != 3 {
		t.Fatalf("created with weights %d and %d", plain.QueueWeight, heavy.QueueWeight)
	}
	var got adminapi.Account
	e.mustStatus(e.admin("PATCH", "/admin/v1/accounts/"+plain.ID, map[string]any{"queue_weight": 7}), 200).json(t, &got)
	if got.QueueWeight != 7 || got.Residency != "se" {
		t.Fatalf("patched %+v", got)
	}
	e.mustStatus(e.admin("GET", "/admin/v1/accounts/"+plain.ID, nil), 200).json(t, &got)
	if got.QueueWeight != 7 {
		t.Fatalf("read back weight %d", got.QueueWeight)
	}
	var page adminapi.AccountPage
	e.mustStatus(e.admin("GET", "/admin/v1/accounts?q=Heavy", nil), 200).json(t, &page)
	if len(page.Data) != 1 || page.Data[0].QueueWeight != 3 {
		t.Fatalf("search %+v", page.Data)
	}

	e.waitSnapshot(t, func(snap snapshot.Snapshot) bool {
		weights := map[string]int{}
		for _, a := range snap.Accounts {
			weights[a.ID] = a.Weight()
		}
		return weights[plain.ID] == 7 && weights[heavy.ID] == 3
	})
}
