package index

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/snapshot"
)

func build(t *testing.T) (*Index, fixture.Keys) {
	t.Helper()
	s, ks := fixture.Snapshot(7, "http://127.0.0.1:1/v1", time.Unix(1_800_000_000, 0))
	x, err := Build(s)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return x, ks
}

func ids(ms []*Model) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func TestBuildIndexes(t *testing.T) {
	x, ks := build(t)
	if x.Version() != 7 {
		t.Fatalf("version %d", x.Version())
	}
	k, ok := x.Key(ks.IDs["se"])
	if !ok || k.Account.ID != fixture.AcctSE || k.ExpiresAt.IsZero() {
		t.Fatalf("key se: %+v %v", k, ok)
	}
	if _, ok := x.Key(ks.IDs["revoked"]); ok {
		t.Fatal("revoked key present")
	}
	sum := apikey.HashBytes([]byte(ks.Revoked))
	if at, ok := x.Revoked(ks.IDs["revoked"], sum[:4]); !ok || at.IsZero() {
		t.Errorf("revoked key not listed as revoked: %v %v", at, ok)
	}
	if _, ok := x.Revoked(ks.IDs["revoked"], []byte{0, 0, 0, 0}); ok {
		t.Error("a secret of another hash was answered as revoked")
	}
	if _, ok := x.Revoked(ks.IDs["se"], sum[:4]); ok {
		t.Error("a live key was answered as revoked")
	}
	for _, name := range []string{fixture.ModelChat, fixture.AliasChat, fixture.AliasChatSlash} {
		m, ok := x.Model(name)
		if !ok || m.ID != fixture.ModelChat {
			t.Errorf("Model(%q) = %v, %v", name, m, ok)
		}
	}
	if _, ok := x.Model("nope"); ok {
		t.Error("unknown model resolved")
	}
}

func TestVisibleModelsFollowResidency(t *testing.T) {
	x, _ := build(t)
	cases := []struct {
		acct        string
		want        []string
		satisfiable bool
	}{
		{fixture.AcctSE, []string{fixture.ModelChat, fixture.ModelEmbed}, true}, // eu-only model hidden
		{fixture.AcctEU, []string{fixture.ModelChat, fixture.ModelEUOnly, fixture.ModelEmbed}, true},
		{fixture.AcctEmpty, nil, true},
	}
	for _, c := range cases {
		a, ok := x.Account(c.acct)
		if !ok {
			t.Fatalf("account %s missing", c.acct)
		}
		if got := ids(a.Visible); !slices.Equal(got, c.want) {
			t.Errorf("%s visible = %v, want %v", c.acct, got, c.want)
		}
		if a.Satisfiable != c.satisfiable {
			t.Errorf("%s satisfiable = %v", c.acct, a.Satisfiable)
		}
		for _, id := range c.want {
			if _, ok := a.VisibleModel(id); !ok {
				t.Errorf("%s: VisibleModel(%s) false", c.acct, id)
			}
		}
	}
}

func TestCandidatesAndEndpoints(t *testing.T) {
	x, _ := build(t)
	m, _ := x.Model(fixture.ModelChat)
	if got := m.Endpoints("se"); !slices.Equal(got, []string{snapshot.EndpointChat, snapshot.EndpointCompletions, snapshot.EndpointMessages, snapshot.EndpointResponses}) {
		t.Errorf("se endpoints %v", got)
	}
	// eu: the DE route adds nothing new, and translation comes from the SE route.
	if got := m.Endpoints("eu"); !slices.Equal(got, []string{snapshot.EndpointChat, snapshot.EndpointCompletions, snapshot.EndpointMessages, snapshot.EndpointResponses}) {
		t.Errorf("eu endpoints %v", got)
	}
	se := m.Candidates("se", EPChat)
	if len(se) != 1 || se[0].Route.ID != fixture.RouteChatSE || se[0].Route.UpstreamModel != fixture.UpstreamChatSE {
		t.Errorf("se chat candidates %+v", se)
	}
	eu := m.Candidates("eu", EPChat)
	if len(eu) != 2 || eu[0].Route.ID != fixture.RouteChatSE || eu[1].Route.ID != fixture.RouteChatDE {
		t.Errorf("eu chat candidates not priority-sorted: %+v", eu)
	}
	if eu[1].Route.UpstreamModel != fixture.ModelChat {
		t.Errorf("default upstream model %q", eu[1].Route.UpstreamModel)
	}
	msg := m.Candidates("eu", EPMessages)
	if len(msg) != 1 || !msg[0].Translate {
		t.Errorf("messages candidates %+v", msg)
	}
	if c := m.Candidates("se", EPEmbeddings); len(c) != 0 {
		t.Errorf("embeddings on chat model: %+v", c)
	}
	if c := m.Candidates("bogus", EPChat); c != nil {
		t.Errorf("bogus policy: %+v", c)
	}
}

func TestUnsatisfiableResidency(t *testing.T) {
	s, _ := fixture.Snapshot(1, "http://x/v1", time.Now())
	var routes []snapshot.Route
	for _, r := range s.Routes {
		if r.Country != "SE" {
			routes = append(routes, r)
		}
	}
	s.Routes = routes
	x, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	se, _ := x.Account(fixture.AcctSE)
	eu, _ := x.Account(fixture.AcctEU)
	if se.Satisfiable || !eu.Satisfiable {
		t.Errorf("satisfiable se=%v eu=%v", se.Satisfiable, eu.Satisfiable)
	}
	if len(se.Visible) != 0 {
		t.Errorf("se sees %v", ids(se.Visible))
	}
}

func TestBuildRejectsInvalid(t *testing.T) {
	cases := map[string]func(s *snapshot.Snapshot){
		"route unknown model": func(s *snapshot.Snapshot) { s.Routes[0].Model = "nope" },
		"duplicate model":     func(s *snapshot.Snapshot) { s.Models = append(s.Models, s.Models[0]) },
		"alias clash":         func(s *snapshot.Snapshot) { s.Models[1].Aliases = []string{fixture.AliasChat} },
		"alias is other id":   func(s *snapshot.Snapshot) { s.Models[1].Aliases = []string{fixture.ModelChat} },
		"bad key hash":        func(s *snapshot.Snapshot) { s.Keys[0].Hash = "zz" },
		"bad key id":          func(s *snapshot.Snapshot) { s.Keys[0].ID = "key_XYZ" },
		"key unknown account": func(s *snapshot.Snapshot) { s.Keys[0].AccountID = "acct_x" },
		"route no base url":   func(s *snapshot.Snapshot) { s.Routes[0].BaseURL = "" },
		"duplicate route":     func(s *snapshot.Snapshot) { s.Routes[1].ID = s.Routes[0].ID },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			s, _ := fixture.Snapshot(1, "http://x/v1", time.Now())
			mutate(s)
			if _, err := Build(s); !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
	if _, err := Build(nil); !errors.Is(err, ErrInvalid) {
		t.Fatal("nil snapshot accepted")
	}
}

func TestStoreSwap(t *testing.T) {
	var st Store
	if st.Ready() || st.Load() != nil {
		t.Fatal("zero store ready")
	}
	a, _ := build(t)
	b, _ := build(t)
	if prev := st.Swap(a); prev != nil {
		t.Fatal("prev not nil")
	}
	if prev := st.Swap(b); prev != a || st.Load() != b || !st.Ready() {
		t.Fatal("swap did not install b")
	}
}

func TestRouteURL(t *testing.T) {
	cases := []struct {
		base, addr, host, path string
		tls                    bool
	}{
		{"http://10.0.0.5:8000/v1", "10.0.0.5:8000", "10.0.0.5:8000", "/v1/chat/completions", false},
		{"http://10.0.0.5:8000/v1/", "10.0.0.5:8000", "10.0.0.5:8000", "/v1/chat/completions", false},
		{"http://10.0.0.5:8000", "10.0.0.5:8000", "10.0.0.5:8000", "/v1/chat/completions", false},
		{"https://llm.example/openai/v1", "llm.example:443", "llm.example", "/openai/v1/chat/completions", true},
		{"http://[::1]/v1", "[::1]:80", "[::1]", "/v1/chat/completions", false},
	}
	for _, c := range cases {
		r := &Route{Route: snapshot.Route{BaseURL: c.base}}
		if err := r.parseBaseURL(); err != nil {
			t.Fatalf("%s: %v", c.base, err)
		}
		if r.UpstreamAddr != c.addr || r.UpstreamHost != c.host || r.URLPath(EPChat) != c.path || r.UpstreamTLS != c.tls {
			t.Errorf("%s: addr %q host %q path %q tls %v", c.base, r.UpstreamAddr, r.UpstreamHost, r.URLPath(EPChat), r.UpstreamTLS)
		}
	}
	for _, bad := range []string{"ftp://x/v1", "http:///v1", "http://u:p@x/v1", "://"} {
		r := &Route{Route: snapshot.Route{BaseURL: bad}}
		if err := r.parseBaseURL(); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
