package publish

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/shared/snapshot"
)

// TestRevokedKeysByProtocol: nodes of the current protocol get the revoked keys in the
// signed content, unfiltered and filtered alike; nodes of protocol 1, which cannot read
// them (they rehash the content they decode), get a signed snapshot without them.
func TestRevokedKeysByProtocol(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	pub := key.Public().(ed25519.PublicKey)
	snap := filterFixture()
	snap.Revoked = []snapshot.RevokedKey{{ID: "key_0123456789ab", HashPrefix: "a1b2c3d4", RevokedAt: time.Unix(1700000000, 0).UTC()}}
	p, err := New(Config{Store: fixedStore{snap}, Signer: key})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	cur, _ := p.Current()
	for _, tc := range []struct {
		country  string
		protocol int
		revoked  int
	}{
		{"", 0, 1}, {"", 2, 1}, {"SE", 2, 1}, {"US", 0, 1},
		{"", 1, 0}, {"SE", 1, 0},
	} {
		v, err := p.variant(cur, tc.country, tc.protocol)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Snapshot.VerifySigned(pub); err != nil {
			t.Errorf("%q protocol %d: %v", tc.country, tc.protocol, err)
		}
		var wire map[string]json.RawMessage
		if err := json.Unmarshal(v.JSON, &wire); err != nil {
			t.Fatal(err)
		}
		_, onWire := wire["revoked"]
		if len(v.Snapshot.Revoked) != tc.revoked || onWire != (tc.revoked > 0) {
			t.Errorf("%q protocol %d: %d revoked keys (on the wire: %v), want %d", tc.country, tc.protocol, len(v.Snapshot.Revoked), onWire, tc.revoked)
		}
		if again, _ := p.variant(cur, tc.country, tc.protocol); again != v {
			t.Errorf("%q protocol %d: variant rebuilt on each poll", tc.country, tc.protocol)
		}
	}
	// Without revoked keys a protocol-1 node gets the snapshot itself.
	p2, _ := New(Config{Store: fixedStore{filterFixture()}, Signer: key})
	if err := p2.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	cur2, _ := p2.Current()
	if v, _ := p2.variant(cur2, "", 1); v != cur2 {
		t.Error("a protocol-1 node got a copy of a snapshot without revoked keys")
	}
}

// TestBudgetsByProtocol: nodes of protocol 3 get the budgets and their spend; nodes of 2
// and 1 a signed snapshot without them that still verifies, version 1 also without the
// revoked keys.
func TestBudgetsByProtocol(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	pub := key.Public().(ed25519.PublicKey)
	snap := filterFixture()
	snap.Revoked = []snapshot.RevokedKey{{ID: "key_0123456789ab", HashPrefix: "a1b2c3d4", RevokedAt: time.Unix(1700000000, 0).UTC()}}
	snap.Accounts[0].Budget = &snapshot.Budget{Period: snapshot.PeriodMonth, LimitMicroSEK: 5_000_000}
	snap.Keys[0].Budget = &snapshot.Budget{Period: snapshot.PeriodDay, LimitMicroSEK: 1_000_000}
	snap.Spent = []snapshot.Spent{{AccountID: snap.Accounts[0].ID, From: time.Unix(1700000000, 0).UTC(), MicroSEK: 42}}
	p, err := New(Config{Store: fixedStore{snap}, Signer: key})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	cur, _ := p.Current()
	for _, tc := range []struct {
		protocol         int
		budgets, revoked bool
	}{{0, true, true}, {3, true, true}, {2, false, true}, {1, false, false}} {
		v, err := p.variant(cur, "", tc.protocol)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Snapshot.VerifySigned(pub); err != nil {
			t.Errorf("protocol %d: %v", tc.protocol, err)
		}
		s := v.Snapshot
		got := s.Accounts[0].Budget != nil || s.Keys[0].Budget != nil || len(s.Spent) > 0
		onWire := strings.Contains(string(v.JSON), `"budget"`) || strings.Contains(string(v.JSON), `"spent"`)
		if got != tc.budgets || onWire != tc.budgets || (len(s.Revoked) > 0) != tc.revoked {
			t.Errorf("protocol %d: budgets %v (on the wire %v), revoked %d; want budgets %v, revoked %v", tc.protocol, got, onWire, len(s.Revoked), tc.budgets, tc.revoked)
		}
	}
	if cur.Snapshot.Accounts[0].Budget == nil || cur.Snapshot.Keys[0].Budget == nil {
		t.Error("making an old protocol's variant changed the current snapshot")
	}
}
