// Package index owns the node's lookup index of a snapshot (keys, accounts, models, routes and
// endpoints), built once per snapshot and held behind an atomic pointer for lock-free reads.
package index

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
	// ServerName is, for a replica of a discovered https route, the name its TLS
	// certificate is checked against (it is dialled by IP address); empty otherwise.
	ServerName string
	// Parent is, for a replica of a discovered route, that route's ID; empty otherwise.
	Parent string
	paths  [numEndpoints]string
	// speaks has bit e set when the upstream speaks endpoint e natively.
	speaks uint8
	// allowExt has bit i set when the route allows snapshot.Extensions[i].
	allowExt uint32
	// BreakerMemo and UpstreamMemo hold what routing.Health and proxy.Pool derive from
	// the route (its circuit breaker, its upstream client), each stored once by its owner,
	// so the request path finds them with one atomic load instead of a map lookup. An
	// owner checks that a memo is its own: two of them may share a snapshot (tests).
	BreakerMemo, UpstreamMemo atomic.Value
	// LoadMemo holds the route's load state (dataplane/loadstat), stored once the same way.
	LoadMemo atomic.Value
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
	// endpoints[policy] is the sorted list of endpoint paths with at least one candidate
	// or discovered route.
	endpoints [len(policies)][]string
	// discovered are the model's routes discovered from DNS, with replicas or not.
	discovered []snapshot.Route
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
	// CacheSalt is the cache_salt the node sends on the account's requests to models with
	// account cache isolation (salt.go): CacheSaltBytes in hex, stable for the account.
	CacheSalt string
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
	Budget    *snapshot.Budget // the key's own spend cap (nil: none)
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
	// discovered are the snapshot's discovered routes, replicas the replicas the index
	// was built with, served the routes it serves (replicas in place of discovered ones).
	discovered []snapshot.Route
	replicas   Replicas
	served     []snapshot.Route
	// revoked: recently revoked keys (snapshot.Content.Revoked).
	revoked map[string]revokedKey
}

type revokedKey struct {
	at         time.Time
	hashPrefix [4]byte
}

// Revoked returns when the key with public ID id was revoked, when the snapshot lists it
// as revoked and hashPrefix matches the first 4 bytes of its hash.
func (x *Index) Revoked(id string, hashPrefix []byte) (time.Time, bool) {
	r, ok := x.revoked[id]
	if !ok || len(hashPrefix) < 4 || [4]byte(hashPrefix[:4]) != r.hashPrefix {
		return time.Time{}, false
	}
	return r.at, true
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

func (x *Index) indexRevoked(list []snapshot.RevokedKey) error {
	if len(list) == 0 {
		return nil
	}
	if len(list) > snapshot.MaxRevoked {
		return invalid("%d revoked keys, more than %d", len(list), snapshot.MaxRevoked)
	}
	x.revoked = make(map[string]revokedKey, len(list))
	for i, r := range list {
		if !apikey.ValidID(r.ID) {
			return invalid("revoked key %d: malformed id %q", i, r.ID)
		}
		if _, dup := x.keys[r.ID]; dup {
			return invalid("revoked key %q is also a key of this snapshot", r.ID)
		}
		p, err := hex.DecodeString(r.HashPrefix)
		if err != nil || len(p) != 4 {
			return invalid("revoked key %q: hash_prefix is not 8 hex digits", r.ID)
		}
		x.revoked[r.ID] = revokedKey{at: r.RevokedAt, hashPrefix: [4]byte(p)}
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

// CompareAndSwap installs x if old is the current index (a rebuild of the current one
// must not replace a newer snapshot's).
func (s *Store) CompareAndSwap(old, x *Index) bool { return s.cur.CompareAndSwap(old, x) }

// Ready reports whether an index is installed.
func (s *Store) Ready() bool { return s.cur.Load() != nil }
