package proxy

import (
	"testing"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/snapshot"
)

func poolRoutes(t *testing.T, baseURLs ...string) []*index.Route {
	t.Helper()
	snap := &snapshot.Snapshot{Content: snapshot.Content{Models: []snapshot.Model{{ID: "m"}}}}
	for i, u := range baseURLs {
		snap.Routes = append(snap.Routes, snapshot.Route{ID: string(rune('a' + i)), Model: "m", BaseURL: u,
			Protocols: []string{snapshot.EndpointChat}, Country: "SE"})
	}
	x, err := index.Build(snap)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := x.Model("m")
	return m.Routes
}

// TestPoolForSharesAndOwns: routes with the same upstream configuration share one Upstream,
// across snapshots too (connection pools survive a swap); a different address gets its
// own; and a route's memo belongs to the Pool that set it, so a second Pool given the
// same route builds its own Upstream instead of using the first one's.
func TestPoolForSharesAndOwns(t *testing.T) {
	const one, two = "http://127.0.0.1:9/v1", "http://127.0.0.2:9/v1"
	old := poolRoutes(t, one, two)
	next := poolRoutes(t, one, two)
	p := NewPool(Config{})
	if a, b := p.For(old[0]), p.For(next[0]); a != b {
		t.Error("the same upstream in the next snapshot got a new Upstream")
	}
	if a, b := p.For(old[0]), p.For(old[1]); a == b {
		t.Error("two addresses share one Upstream")
	}
	if a, b := p.For(old[0]), p.For(old[0]); a != b || a.pool != p {
		t.Error("a second look-up of the same route gave another Upstream")
	}
	q := NewPool(Config{})
	if a, b := p.For(old[0]), q.For(old[0]); a == b || b.pool != q {
		t.Error("a second Pool used the first one's Upstream")
	}
	if u := p.For(old[0]); u.pool != p {
		t.Error("the first Pool lost its Upstream after the second used the route")
	}
}
