package publish

import (
	"context"
	"crypto/ed25519"
	"maps"
	"testing"

	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/snapshot"
)

// fixedStore compiles the same snapshot every time.
type fixedStore struct{ s *snapshot.Snapshot }

func (f fixedStore) CompileSnapshot(context.Context, snapshot.Limits) (*snapshot.Snapshot, error) {
	c := *f.s
	return &c, nil
}

func (fixedStore) Listen(ctx context.Context, _ store.Listener) error { <-ctx.Done(); return nil }

// TestRegionURLsInSnapshot: the configured region URLs are part of every published
// snapshot's signed content, the unfiltered one and each country's; a bad entry is refused
// by New.
func TestRegionURLsInSnapshot(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	urls := map[string]string{"se": "https://se.gateway.example", "eu": "https://eu.gateway.example", "any": "https://gateway.example"}
	p, err := New(Config{Store: fixedStore{filterFixture()}, RegionURLs: urls, Signer: key})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	cur, _ := p.Current()
	for _, country := range []string{"", "SE", "US"} {
		v, err := p.variant(cur, country, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(v.Snapshot.RegionURLs, urls) {
			t.Errorf("snapshot for %q: region URLs %v", country, v.Snapshot.RegionURLs)
		}
		if err := v.Snapshot.VerifySigned(key.Public().(ed25519.PublicKey)); err != nil {
			t.Errorf("snapshot for %q: %v", country, err)
		}
		// Changing them changes the signed content.
		changed := *v.Snapshot
		changed.RegionURLs = map[string]string{"se": "https://evil.example"}
		if changed.VerifySigned(key.Public().(ed25519.PublicKey)) == nil {
			t.Errorf("snapshot for %q still verifies with other region URLs", country)
		}
	}
	if _, err := New(Config{Store: fixedStore{filterFixture()}, RegionURLs: map[string]string{"us": "https://x.example"}}); err == nil {
		t.Error("a region URL for an unknown policy accepted")
	}
	// Without URLs the snapshot has none.
	p, _ = New(Config{Store: fixedStore{filterFixture()}})
	if err := p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if cur, _ := p.Current(); cur.Snapshot.RegionURLs != nil || cur.Snapshot.Verify() != nil {
		t.Errorf("no URLs configured: %v", cur.Snapshot.RegionURLs)
	}
}
