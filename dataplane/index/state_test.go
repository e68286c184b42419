package index

import (
	"errors"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/shared/snapshot"
)

// A disabled or draining route is never a candidate; an enabled one (spelt out or empty)
// is; an unknown state refuses the snapshot like any invalid route.
func TestRouteStateCandidates(t *testing.T) {
	for _, tt := range []struct {
		state string
		want  []string // eu chat candidates
	}{
		{"", []string{fixture.RouteChatSE, fixture.RouteChatDE}},
		{snapshot.RouteEnabled, []string{fixture.RouteChatSE, fixture.RouteChatDE}},
		{snapshot.RouteDisabled, []string{fixture.RouteChatDE}},
		{snapshot.RouteDraining, []string{fixture.RouteChatDE}},
	} {
		t.Run("state="+tt.state, func(t *testing.T) {
			s, _ := fixture.Snapshot(1, "http://127.0.0.1:1/v1", time.Unix(1_800_000_000, 0))
			for i := range s.Routes {
				if s.Routes[i].ID == fixture.RouteChatSE {
					s.Routes[i].State = tt.state
				}
			}
			x, err := Build(s)
			if err != nil {
				t.Fatal(err)
			}
			m, _ := x.Model(fixture.ModelChat)
			var got []string
			for _, c := range m.Candidates("eu", EPChat) {
				got = append(got, c.Route.ID)
			}
			if len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) {
				t.Errorf("eu chat candidates %v, want %v", got, tt.want)
			}
			// The SE route is the only one se accounts may use, and translates Messages.
			se, msg := m.Candidates("se", EPChat), m.Candidates("eu", EPMessages)
			if serving := tt.want[0] == fixture.RouteChatSE; (len(se) == 1) != serving || (len(msg) == 1) != serving {
				t.Errorf("se chat %d, eu messages %d candidates; SE route serving %v", len(se), len(msg), serving)
			}
		})
	}
	s, _ := fixture.Snapshot(1, "http://127.0.0.1:1/v1", time.Unix(1_800_000_000, 0))
	s.Routes[0].State = "paused"
	if _, err := Build(s); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unknown state: %v", err)
	}
}
