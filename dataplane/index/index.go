// Package index owns the node's lookup index of a snapshot (keys, accounts, models, routes and
// endpoints), built once per snapshot and held behind an atomic pointer for lock-free reads.
package index

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/residency"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Endpoint is a small integer naming an inference protocol, used to index per-endpoint
// tables without map lookups on the request path.
type Endpoint uint8

// Endpoints in the order of snapshot.Endpoint* constants.
const (
	EPChat Endpoint = iota
	EPCompletions
	EPEmbeddings
	EPResponses
	EPMessages
	EPSystemOne
	numEndpoints
)

var endpointPaths = [numEndpoints]string{
	snapshot.EndpointChat, snapshot.EndpointCompletions, snapshot.EndpointEmbeddings,
	snapshot.EndpointResponses, snapshot.EndpointMessages, snapshot.EndpointSystemOne,
}

// Path returns the endpoint's URL path.
func (e Endpoint) Path() string { return endpointPaths[e] }

// EndpointOf maps an endpoint path to its Endpoint.
func EndpointOf(path string) (Endpoint, bool) {
	for i, p := range endpointPaths {
		if p == path {
			return Endpoint(i), true
		}
	}
	return 0, false
}

// policies are the residency policies the index precomputes tables for.
var policies = [...]string{residency.SE, residency.EU, residency.Any}

func policyIndex(p string) int {
	switch p {
	case residency.SE:
		return 0
	case residency.EU:
		return 1
	case residency.Any:
		return 2
	}
	return -1
}

// Route is a snapshot route with the fields the request path needs precomputed.
type Route struct {
	snapshot.Route
	// UpstreamModel is the model name to send upstream (the canonical ID when unset).
	UpstreamModel string
	// UpstreamTLS, UpstreamAddr (host:port) and UpstreamHost (Host header) come from BaseURL.
	UpstreamTLS  bool
	UpstreamAddr string
	UpstreamHost string
	// PathPrefix is BaseURL's path without a trailing "/v1" or "/"; the upstream URL of an
	// endpoint is PathPrefix + endpoint path, so a base URL ending in /v1 never yields /v1/v1.
	PathPrefix string
	paths      [numEndpoints]string
	// speaks has bit e set when the upstream speaks endpoint e natively.
	speaks uint8
	// allowExt has bit i set when the route allows snapshot.Extensions[i].
	allowExt uint32
}

func (r *Route) parseBaseURL() error {
	b, err := snapshot.ParseBaseURL(r.BaseURL)
	if err != nil {
		return err
	}
	r.UpstreamTLS, r.UpstreamHost, r.UpstreamAddr, r.PathPrefix = b.TLS, b.Host, b.Addr, b.PathPrefix
	for e := range numEndpoints {
		r.paths[e] = r.PathPrefix + e.Path()
	}
	return nil
}

// URLPath returns the upstream request path for endpoint e.
func (r *Route) URLPath(e Endpoint) string { return r.paths[e] }

// Accepts reports whether the route may serve a request that uses remote media (remote)
// and the provider extensions in ext (bit i: snapshot.Extensions[i]).
func (r *Route) Accepts(remote bool, ext uint32) bool {
	return (!remote || r.AllowRemoteMedia) && ext&^r.allowExt == 0
}

// AllowsExtensions reports whether the route allows every extension in ext.
func (r *Route) AllowsExtensions(ext uint32) bool { return ext&^r.allowExt == 0 }

// Speaks reports whether the route's upstream speaks e natively.
func (r *Route) Speaks(e Endpoint) bool { return r.speaks&(1<<e) != 0 }

// Candidate is a route eligible for one endpoint; Translate is set when the request must be
// translated to the upstream's chat completions protocol.
type Candidate struct {
	Route     *Route
	Translate bool
}

// Model is a catalogue model with its routes.
type Model struct {
	snapshot.Model
	// Routes of the model sorted by priority (then ID).
	Routes []*Route
	// byPolicy[policy][endpoint] lists the candidates for that policy and endpoint, sorted by
	// priority (then ID).
	byPolicy [len(policies)][numEndpoints][]Candidate
	// endpoints[policy] is the sorted list of endpoint paths with at least one candidate.
	endpoints [len(policies)][]string
}

// Candidates returns the routes eligible for an account with policy p on endpoint e,
// sorted by priority. The slice is shared and must not be modified.
func (m *Model) Candidates(p string, e Endpoint) []Candidate {
	i := policyIndex(p)
	if i < 0 || e >= numEndpoints {
		return nil
	}
	return m.byPolicy[i][e]
}

// Endpoints returns the endpoint paths with at least one route eligible under policy p.
func (m *Model) Endpoints(p string) []string {
	i := policyIndex(p)
	if i < 0 {
		return nil
	}
	return m.endpoints[i]
}

// Account is a customer account with its visible models resolved.
type Account struct {
	snapshot.Account
	// Visible lists the models the account may use and that have at least one route whose
	// country satisfies the account's residency, sorted by ID.
	Visible []*Model
	visible map[string]*Model
	// Satisfiable reports whether any route of this deployment satisfies the account's
	// residency policy (false for unknown policies).
	Satisfiable bool
}

// VisibleModel returns the model with canonical ID id if the account may see it.
func (a *Account) VisibleModel(id string) (*Model, bool) {
	m, ok := a.visible[id]
	return m, ok
}

// Key is an API key with its decoded hash and its account.
type Key struct {
	ID        string
	Hash      [sha256.Size]byte
	ExpiresAt time.Time // zero when the key does not expire
	Account   *Account
	Limits    *snapshot.Limits
}

// Index is the immutable lookup structure built from one snapshot.
type Index struct {
	Snapshot *snapshot.Snapshot
	keys     map[string]*Key
	accounts map[string]*Account
	models   map[string]*Model // canonical ID
	aliases  map[string]*Model // alias -> model
	// elsewhere: keys of accounts served in other countries (snapshot.Content.Elsewhere).
	elsewhere map[string]elsewhereKey
}

type elsewhereKey struct {
	residency  string
	hashPrefix [4]byte
}

// Elsewhere returns the residency policy of the account owning the key with public ID id
// when the snapshot lists it as served in another country and hashPrefix matches the
// first 4 bytes of its hash.
func (x *Index) Elsewhere(id string, hashPrefix []byte) (string, bool) {
	e, ok := x.elsewhere[id]
	if !ok || len(hashPrefix) < 4 || [4]byte(hashPrefix[:4]) != e.hashPrefix {
		return "", false
	}
	return e.residency, true
}

// Version is the snapshot version the index was built from.
func (x *Index) Version() int64 { return x.Snapshot.Version }

// Key returns the key with public ID id.
func (x *Index) Key(id string) (*Key, bool) { k, ok := x.keys[id]; return k, ok }

// Account returns the account with ID id.
func (x *Index) Account(id string) (*Account, bool) { a, ok := x.accounts[id]; return a, ok }

// Model resolves a canonical ID or an alias to its model.
func (x *Index) Model(idOrAlias string) (*Model, bool) {
	if m, ok := x.models[idOrAlias]; ok {
		return m, true
	}
	m, ok := x.aliases[idOrAlias]
	return m, ok
}

// ErrInvalid wraps every reason a snapshot cannot be indexed.
var ErrInvalid = errors.New("index: invalid snapshot")

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
}

// Build validates s and builds its index. It does not verify the hash (see
// snapshot.Snapshot.Verify); s must not be modified afterwards.
func Build(s *snapshot.Snapshot) (*Index, error) {
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
	for i := range s.Models {
		sm := s.Models[i]
		if sm.ID == "" {
			return nil, invalid("model %d has no id", i)
		}
		if _, dup := x.models[sm.ID]; dup {
			return nil, invalid("duplicate model %q", sm.ID)
		}
		x.models[sm.ID] = &Model{Model: sm}
	}
	for _, m := range x.models {
		for _, a := range m.Aliases {
			if a == "" {
				continue
			}
			if other, clash := x.models[a]; clash && other != m {
				return nil, invalid("alias %q of model %q is another model's id", a, m.ID)
			}
			if other, dup := x.aliases[a]; dup && other != m {
				return nil, invalid("alias %q used by models %q and %q", a, other.ID, m.ID)
			}
			x.aliases[a] = m
		}
	}
	routeIDs := make(map[string]bool, len(s.Routes))
	for i := range s.Routes {
		sr := s.Routes[i]
		if sr.ID == "" || routeIDs[sr.ID] {
			return nil, invalid("route %d: missing or duplicate id %q", i, sr.ID)
		}
		routeIDs[sr.ID] = true
		m, ok := x.models[sr.Model]
		if !ok {
			return nil, invalid("route %q names unknown model %q", sr.ID, sr.Model)
		}
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
		m.Routes = append(m.Routes, r)
	}
	var countries []string
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
			for e := range numEndpoints {
				if len(m.byPolicy[pi][e]) > 0 {
					m.endpoints[pi] = append(m.endpoints[pi], e.Path())
				}
			}
			slices.Sort(m.endpoints[pi])
		}
		for _, r := range m.Routes {
			countries = append(countries, r.Country)
		}
	}
	for i := range s.Accounts {
		sa := s.Accounts[i]
		if sa.ID == "" {
			return nil, invalid("account %d has no id", i)
		}
		if _, dup := x.accounts[sa.ID]; dup {
			return nil, invalid("duplicate account %q", sa.ID)
		}
		a := &Account{Account: sa, visible: make(map[string]*Model, len(sa.Models))}
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
	for i := range s.Keys {
		sk := s.Keys[i]
		if !apikey.ValidID(sk.ID) {
			return nil, invalid("key %d has malformed id %q", i, sk.ID)
		}
		if _, dup := x.keys[sk.ID]; dup {
			return nil, invalid("duplicate key %q", sk.ID)
		}
		a, ok := x.accounts[sk.AccountID]
		if !ok {
			return nil, invalid("key %q names unknown account %q", sk.ID, sk.AccountID)
		}
		h, err := apikey.DecodeHash(sk.Hash)
		if err != nil {
			return nil, invalid("key %q: %v", sk.ID, err)
		}
		k := &Key{ID: sk.ID, Hash: h, Account: a, Limits: sk.Limits}
		if sk.ExpiresAt != nil {
			k.ExpiresAt = *sk.ExpiresAt
		}
		x.keys[sk.ID] = k
	}
	if err := x.indexElsewhere(s.Elsewhere); err != nil {
		return nil, err
	}
	if err := snapshot.CheckRegionURLs(s.RegionURLs); err != nil {
		return nil, invalid("region_urls: %v", err)
	}
	return x, nil
}

func (x *Index) indexElsewhere(list []snapshot.ElsewhereKey) error {
	if len(list) == 0 {
		return nil
	}
	x.elsewhere = make(map[string]elsewhereKey, len(list))
	for i, e := range list {
		if !apikey.ValidID(e.ID) || !residency.Valid(e.Residency) {
			return invalid("elsewhere key %d: malformed id %q or residency %q", i, e.ID, e.Residency)
		}
		if _, dup := x.keys[e.ID]; dup {
			return invalid("elsewhere key %q is also a key of this snapshot", e.ID)
		}
		p, err := hex.DecodeString(e.HashPrefix)
		if err != nil || len(p) != 4 {
			return invalid("elsewhere key %q: hash_prefix is not 8 hex digits", e.ID)
		}
		x.elsewhere[e.ID] = elsewhereKey{residency: e.Residency, hashPrefix: [4]byte(p)}
	}
	return nil
}

// Store holds the current index. The zero value holds none (not ready).
type Store struct {
	cur atomic.Pointer[Index]
}

// Load returns the current index, or nil when no snapshot was applied yet.
func (s *Store) Load() *Index { return s.cur.Load() }

// Swap installs x as the current index and returns the previous one.
func (s *Store) Swap(x *Index) *Index { return s.cur.Swap(x) }

// Ready reports whether an index is installed.
func (s *Store) Ready() bool { return s.cur.Load() != nil }
