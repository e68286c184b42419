package index

import (
	"slices"
	"strings"

	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/residency"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Build validates s and builds its index with cache salts keyed by an empty key (tests and
// tools; nodes use BuildKeyed). It does not verify the hash (see snapshot.Snapshot.Verify);
// s must not be modified afterwards.
func Build(s *snapshot.Snapshot) (*Index, error) { return BuildKeyed(s, nil) }

// BuildKeyed is Build with the accounts' cache salts keyed by saltKey (SaltKey).
func BuildKeyed(s *snapshot.Snapshot, saltKey []byte) (*Index, error) {
	return BuildReplicas(s, saltKey, nil)
}

// BuildReplicas is BuildKeyed with each discovered route (snapshot.Route.Discovery)
// expanded into one route per replica in rep (none when rep has no entry for it).
func BuildReplicas(s *snapshot.Snapshot, saltKey []byte, rep Replicas) (*Index, error) {
	if s == nil {
		return nil, invalid("nil snapshot")
	}
	x := &Index{
		Snapshot: s,
		keys:     make(map[string]*Key, len(s.Keys)),
		accounts: make(map[string]*Account, len(s.Accounts)),
		models:   make(map[string]*Model, len(s.Models)),
		aliases:  make(map[string]*Model),
	}
	if err := x.indexModels(s.Models); err != nil {
		return nil, err
	}
	if err := x.indexRoutes(s.Routes, rep); err != nil {
		return nil, err
	}
	countries := x.planCandidates()
	if err := x.indexAccounts(s.Accounts, countries, newSalter(saltKey)); err != nil {
		return nil, err
	}
	if err := x.indexKeys(s.Keys); err != nil {
		return nil, err
	}
	if err := x.indexRevoked(s.Revoked); err != nil {
		return nil, err
	}
	if err := x.indexElsewhere(s.Elsewhere); err != nil {
		return nil, err
	}
	if err := snapshot.CheckRegionURLs(s.RegionURLs); err != nil {
		return nil, invalid("region_urls: %v", err)
	}
	return x, nil
}

// indexModels indexes the models by ID and by alias; an alias may not be another model's
// ID or another model's alias.
func (x *Index) indexModels(models []snapshot.Model) error {
	for i := range models {
		sm := models[i]
		if sm.ID == "" {
			return invalid("model %d has no id", i)
		}
		if _, dup := x.models[sm.ID]; dup {
			return invalid("duplicate model %q", sm.ID)
		}
		x.models[sm.ID] = &Model{Model: sm}
	}
	for _, m := range x.models {
		for _, a := range m.Aliases {
			if a == "" {
				continue
			}
			if other, clash := x.models[a]; clash && other != m {
				return invalid("alias %q of model %q is another model's id", a, m.ID)
			}
			if other, dup := x.aliases[a]; dup && other != m {
				return invalid("alias %q used by models %q and %q", a, other.ID, m.ID)
			}
			x.aliases[a] = m
		}
	}
	return nil
}

// indexRoutes validates each route and adds it, or its replicas in rep, to its model;
// a route not serving (disabled or draining) is validated and left out.
func (x *Index) indexRoutes(routes []snapshot.Route, rep Replicas) error {
	ids := make(map[string]bool, len(routes))
	for i := range routes {
		sr := routes[i]
		if sr.ID == "" || ids[sr.ID] {
			return invalid("route %d: missing or duplicate id %q", i, sr.ID)
		}
		ids[sr.ID] = true
		m, ok := x.models[sr.Model]
		if !ok {
			return invalid("route %q names unknown model %q", sr.ID, sr.Model)
		}
		if !sr.Serving() {
			// Disabled or draining: checked like any route, never a candidate. Requests
			// already sent to it hold the previous index's route and finish there.
			if err := sr.Validate(); err != nil {
				return invalid("route %q: %v", sr.ID, err)
			}
			continue
		}
		if err := x.indexRoute(sr, m, rep, ids); err != nil {
			return err
		}
	}
	return nil
}

// newRoute validates a snapshot route of model m and precomputes what requests read: the
// parsed base URL, the upstream model name, the protocols and extensions as bit sets.
func newRoute(sr snapshot.Route, m *Model) (*Route, error) {
	if err := sr.Validate(); err != nil {
		return nil, invalid("route %q: %v", sr.ID, err)
	}
	r := &Route{Route: sr, UpstreamModel: sr.UpstreamModel}
	if err := r.parseBaseURL(); err != nil {
		return nil, invalid("route %q: %v", sr.ID, err)
	}
	if r.UpstreamModel == "" {
		r.UpstreamModel = m.ID
	}
	r.Country = strings.ToUpper(r.Country)
	if r.Weight < 0 {
		r.Weight = 0
	}
	for _, p := range sr.Protocols {
		if e, ok := EndpointOf(p); ok {
			r.speaks |= 1 << e
		}
	}
	for _, name := range sr.AllowExtensions {
		// A name this node does not know allows nothing (a newer control plane may
		// know more extensions than an older node).
		if i := snapshot.ExtensionIndex(name); i >= 0 && i < 32 {
			r.allowExt |= 1 << i
		}
	}
	return r, nil
}

// planCandidates orders each model's routes (priority, then ID) and precomputes, per
// residency policy and endpoint, the candidates a request may use (natively or, for
// Messages-style and Responses-style on a translating chat route, by translation) and the
// endpoints the model serves. It returns the countries of all routes.
func (x *Index) planCandidates() (countries []string) {
	for _, m := range x.models {
		slices.SortStableFunc(m.Routes, func(a, b *Route) int {
			if a.Priority != b.Priority {
				return a.Priority - b.Priority
			}
			return strings.Compare(a.ID, b.ID)
		})
		for pi, pol := range policies {
			for _, r := range m.Routes {
				if !residency.Satisfies(pol, r.Country) {
					continue
				}
				for e := range numEndpoints {
					switch {
					case r.Speaks(e):
						m.byPolicy[pi][e] = append(m.byPolicy[pi][e], Candidate{Route: r})
					case r.Translate && r.Speaks(EPChat) && (e == EPMessages || e == EPResponses):
						m.byPolicy[pi][e] = append(m.byPolicy[pi][e], Candidate{Route: r, Translate: true})
					}
				}
			}
			have := m.discoveredEndpoints(pol)
			for e := range numEndpoints {
				if len(m.byPolicy[pi][e]) > 0 || have&(1<<e) != 0 {
					m.endpoints[pi] = append(m.endpoints[pi], e.Path())
				}
			}
			slices.Sort(m.endpoints[pi])
		}
		for _, r := range m.Routes {
			countries = append(countries, r.Country)
		}
		for _, d := range m.discovered {
			countries = append(countries, strings.ToUpper(d.Country))
		}
	}
	return countries
}

// indexAccounts indexes the accounts with the models each may see (those with a candidate
// inside its residency policy), whether any route's country satisfies its policy, and
// their cache salts.
func (x *Index) indexAccounts(accounts []snapshot.Account, countries []string, salts *salter) error {
	for i := range accounts {
		sa := accounts[i]
		if sa.ID == "" {
			return invalid("account %d has no id", i)
		}
		if _, dup := x.accounts[sa.ID]; dup {
			return invalid("duplicate account %q", sa.ID)
		}
		a := &Account{Account: sa, visible: make(map[string]*Model, len(sa.Models)), CacheSalt: salts.salt(sa.ID)}
		for _, c := range countries {
			if residency.Satisfies(sa.Residency, c) {
				a.Satisfiable = true
				break
			}
		}
		pi := policyIndex(sa.Residency)
		for _, id := range sa.Models {
			m, ok := x.models[id]
			if !ok || pi < 0 || a.visible[m.ID] != nil || len(m.endpoints[pi]) == 0 {
				continue
			}
			a.visible[m.ID] = m
			a.Visible = append(a.Visible, m)
		}
		slices.SortFunc(a.Visible, func(p, q *Model) int { return strings.Compare(p.ID, q.ID) })
		x.accounts[sa.ID] = a
	}
	return nil
}

// indexKeys indexes the keys by ID, each with its account and decoded hash.
func (x *Index) indexKeys(keys []snapshot.Key) error {
	for i := range keys {
		sk := keys[i]
		if !apikey.ValidID(sk.ID) {
			return invalid("key %d has malformed id %q", i, sk.ID)
		}
		if _, dup := x.keys[sk.ID]; dup {
			return invalid("duplicate key %q", sk.ID)
		}
		a, ok := x.accounts[sk.AccountID]
		if !ok {
			return invalid("key %q names unknown account %q", sk.ID, sk.AccountID)
		}
		h, err := apikey.DecodeHash(sk.Hash)
		if err != nil {
			return invalid("key %q: %v", sk.ID, err)
		}
		k := &Key{ID: sk.ID, Hash: h, Account: a, Limits: sk.Limits, Budget: sk.Budget}
		if sk.ExpiresAt != nil {
			k.ExpiresAt = *sk.ExpiresAt
		}
		x.keys[sk.ID] = k
	}
	return nil
}
