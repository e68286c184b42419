// Package snapshot holds the wire types of the snapshot the control plane compiles and
// pushes to data-plane nodes: everything a node needs to serve inference without Postgres.
package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Endpoint paths, used as protocol names for models and routes.
const (
	EndpointChat        = "/v1/chat/completions"
	EndpointCompletions = "/v1/completions"
	EndpointEmbeddings  = "/v1/embeddings"
	EndpointResponses   = "/v1/responses"
	EndpointMessages    = "/v1/messages"
	EndpointSystemOne   = "/v1/systemone"
)

// KnownEndpoint reports whether p is one of the inference endpoint paths above.
func KnownEndpoint(p string) bool {
	switch p {
	case EndpointChat, EndpointCompletions, EndpointEmbeddings, EndpointResponses, EndpointMessages, EndpointSystemOne:
		return true
	}
	return false
}

// Snapshot is the full state a data-plane node serves from.
type Snapshot struct {
	Version     int64     `json:"version"`
	Hash        string    `json:"hash"` // hex SHA-256 of the Content's canonical JSON
	GeneratedAt time.Time `json:"generated_at"`
	// IssuedAt is when the control plane signed this snapshot; it is re-issued periodically,
	// and a node's --snapshot-max-age for its disk copy counts from it.
	IssuedAt time.Time `json:"issued_at"`
	// Signature is the control plane's ed25519 signature (standard base64) over version,
	// times and hash (see sign.go).
	Signature string `json:"signature,omitempty"`
	Content
}

// Content is the hashed part of a snapshot.
type Content struct {
	// Country is the ISO 3166-1 alpha-2 code of the country the control plane filtered this
	// snapshot for (only the accounts whose residency admits it, see controlplane/publish);
	// empty for the unfiltered snapshot. Being content, it is covered by the hash and so by
	// the signature; a node started with --country refuses a snapshot for another country.
	Country  string    `json:"country,omitempty"`
	Accounts []Account `json:"accounts"`
	Keys     []Key     `json:"keys"`
	Models   []Model   `json:"models"`
	Routes   []Route   `json:"routes"`
	// Balances as of BalanceSeq (the newest ledger entry included).
	Balances   []Balance `json:"balances"`
	BalanceSeq int64     `json:"balance_seq"`
	// Spent is, as of BalanceSeq, what each account and key with a budget has spent in its
	// current period. Like the balances it moves on its own channel afterwards.
	Spent []Spent `json:"spent,omitempty"`
	// DefaultLimits apply to accounts and keys without their own.
	DefaultLimits Limits `json:"default_limits"`
	// Elsewhere lists, in a snapshot filtered for a country, the keys of accounts served in
	// other countries: no hash, only what lets the node point such a key's holder at the
	// right region (403 residency_unsatisfiable) instead of calling the key invalid.
	Elsewhere []ElsewhereKey `json:"elsewhere,omitempty"`
	// Revoked lists the most recently revoked keys (at most MaxRevoked) by ID, hash prefix
	// and time, so a node tells the holder of a revoked key that it was revoked rather than
	// calling it unknown. Nodes of internal protocol 1 are sent snapshots without it.
	Revoked []RevokedKey `json:"revoked,omitempty"`
	// RegionURLs maps a residency policy (se, eu, any) to the base URL of the operator's
	// region that serves it (the control plane's --region-urls, see ParseRegionURLs). A
	// node names it in the 403 residency_unsatisfiable it gives an account its country
	// does not admit. Empty: none configured.
	RegionURLs map[string]string `json:"region_urls,omitempty"`
}

// ElsewhereKey is a key of an account whose residency policy does not admit the node's
// country.
type ElsewhereKey struct {
	ID        string `json:"id"`        // Key.ID
	Residency string `json:"residency"` // the account's policy
	// HashPrefix is the first 4 bytes (8 hex digits) of the key's hash: enough for the node
	// to answer only holders of the secret, far too little to authenticate anyone.
	HashPrefix string `json:"hash_prefix"`
}

// MaxRevoked bounds Content.Revoked: older revocations are answered as unknown keys.
const MaxRevoked = 10000

// RevokedKey is a revoked key: no hash, only what lets a node answer the holder of its
// secret that the key was revoked.
type RevokedKey struct {
	ID string `json:"id"` // Key.ID
	// HashPrefix is the first 4 bytes (8 hex digits) of the key's hash, as in ElsewhereKey.
	HashPrefix string    `json:"hash_prefix"`
	RevokedAt  time.Time `json:"revoked_at"`
}

// Account is a customer account.
type Account struct {
	ID        string `json:"id"`
	Customer  string `json:"customer"`
	Residency string `json:"residency"` // se, eu, any
	Suspended bool   `json:"suspended"`
	// Models the account may use (canonical IDs).
	Models []string `json:"models"`
	Limits *Limits  `json:"limits,omitempty"`
	// QueueWeight is the account's share of the node's fair queue, where requests wait
	// when every model server that could serve them is full: an account of weight w gets w
	// turns for every one turn of a weight-1 account while both have requests waiting. It
	// changes nothing while servers have room. 0 (absent) means 1; the control plane keeps
	// it within MinQueueWeight..MaxQueueWeight. Weight gives the value to use.
	QueueWeight int `json:"queue_weight,omitempty"`
	// Budget caps the account's spend per period (budget.go); nil: none.
	Budget *Budget `json:"budget,omitempty"`
}

// The bounds of Account.QueueWeight.
const (
	MinQueueWeight = 1
	MaxQueueWeight = 100
)

// Weight is the account's QueueWeight within MinQueueWeight..MaxQueueWeight (0, absent,
// is 1).
func (a *Account) Weight() int {
	return min(max(a.QueueWeight, MinQueueWeight), MaxQueueWeight)
}

// ValidQueueWeight reports whether w may be stored as an account's queue weight.
func ValidQueueWeight(w int) bool { return w >= MinQueueWeight && w <= MaxQueueWeight }

// Key is an API key; revoked keys are left out of the snapshot (see RevokedKey).
type Key struct {
	ID        string     `json:"id"`      // key_<12 hex>
	AccountID string     `json:"account"` // Account.ID
	Hash      string     `json:"hash"`    // hex SHA-256 of the secret
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Limits    *Limits    `json:"limits,omitempty"`
	// Budget caps the key's spend per period (budget.go), on top of its account's; nil:
	// none.
	Budget *Budget `json:"budget,omitempty"`
}

// Model is a catalogue entry with its price.
type Model struct {
	ID            string   `json:"id"`
	Aliases       []string `json:"aliases"`
	Endpoint      string   `json:"endpoint"` // primary endpoint path
	Created       int64    `json:"created"`
	ContextTokens int64    `json:"context_tokens,omitempty"`
	Tokenizer     string   `json:"tokenizer,omitempty"`
	// Prices in integer öre per million tokens.
	InputOrePerMillion  int64 `json:"input_ore_per_million_tokens"`
	OutputOrePerMillion int64 `json:"output_ore_per_million_tokens"`
	// Routing names how nodes order the model's eligible routes (docs/routing.md): scored
	// (the default when empty), weighted, least_load or affinity.
	Routing string `json:"routing,omitempty"`
	// CacheIsolation says whether accounts share the model servers' prefix cache: account
	// (the default when empty) or shared (see isolation.go and docs/security.md).
	CacheIsolation string `json:"cache_isolation,omitempty"`
	// OutputBytesPerToken is the divisor of the node's estimate of the output delivered to
	// a client from its text (docs/limits.md, "Delivered output"): 2 to 32, 0 for the
	// default (8). Set it lower for a model whose tokenizer packs text tightly.
	OutputBytesPerToken int `json:"output_bytes_per_token,omitempty"`
}

// Route is one way to serve a model: an upstream at a location speaking some protocols.
type Route struct {
	ID       string `json:"id"`
	Model    string `json:"model"`    // canonical model ID
	Provider string `json:"provider"` // name reported in X-Service-Provider
	BaseURL  string `json:"base_url"` // e.g. http://10.0.0.5:8000/v1 (paths are appended)
	// UpstreamModel is the model name the upstream expects; empty means the canonical ID.
	UpstreamModel string `json:"upstream_model,omitempty"`
	// CredentialsRef names where the node finds the upstream credential, e.g. "env:VLLM_KEY".
	// Secrets never travel in snapshots.
	CredentialsRef string `json:"credentials_ref,omitempty"`
	// Protocols the upstream speaks natively (endpoint paths).
	Protocols []string `json:"protocols"`
	// Translate allows serving Messages-style and Responses-style requests through the
	// upstream's chat completions protocol.
	Translate bool `json:"translate"`
	// Server names the upstream's server family (one of Servers: vllm, sglang, llamacpp,
	// tgi, ollama, openai; empty means openai): where it puts reasoning and stop strings,
	// how it reports errors inside a stream (dataplane/dialect).
	Server string `json:"server,omitempty"`
	// ContinuousUsageStats: the upstream reports running usage in every stream chunk when
	// asked (vLLM's stream_options.continuous_usage_stats). The node then asks for it and
	// charges a stream cut short from the last running usage instead of an estimate.
	ContinuousUsageStats bool   `json:"continuous_usage_stats,omitempty"`
	Region               string `json:"region"`   // operator's name for the location, e.g. "se-sto-1"
	Country              string `json:"country"`  // ISO 3166-1 alpha-2 of the region, upper case
	Priority             int    `json:"priority"` // lower is preferred
	Weight               int    `json:"weight"`   // relative share among routes of equal priority
	// MaxConns bounds concurrent connections to the upstream (0 = node default).
	MaxConns int `json:"max_conns,omitempty"`
	// Timeouts in milliseconds (0 = node default).
	ConnectTimeoutMS   int `json:"connect_timeout_ms,omitempty"`
	FirstByteTimeoutMS int `json:"first_byte_timeout_ms,omitempty"`
	IdleTimeoutMS      int `json:"idle_timeout_ms,omitempty"`
	TotalTimeoutMS     int `json:"total_timeout_ms,omitempty"`
	// AllowRemoteMedia lets this route serve chat content parts that make the upstream
	// fetch a remote resource (image_url, video_url or audio_url with a URL that is not a
	// data: URL, input_audio or file data given as a URL, file references). Off by default:
	// such requests are refused unless one of their eligible routes allows them.
	AllowRemoteMedia bool `json:"allow_remote_media,omitempty"`
	// AllowExtensions names the provider extension fields (see Extensions) this route
	// accepts. Empty by default: requests using any of them are refused unless one of their
	// eligible routes allows every extension they use.
	AllowExtensions []string `json:"allow_extensions,omitempty"`
	// MetricsURL is the upstream's Prometheus metrics endpoint, which nodes read for its
	// load while they send it requests; empty means the base URL's scheme and host with
	// path /metrics, "off" turns reading off.
	MetricsURL string `json:"metrics_url,omitempty"`
	// Discovery says where the route's replicas come from (discovery.go): empty, the one
	// server of the base URL; "dns", every A/AAAA address of the base URL's host, each
	// with the URL's port; "dns-srv", every target and port of the SRV records the base
	// URL's host names. Nodes re-resolve the name and serve each replica as a route of its
	// own (ID "<route>@<ip:port>") with this route's other fields.
	Discovery string `json:"discovery,omitempty"`
	// State is whether nodes send the route new requests: empty (RouteEnabled) they do;
	// RouteDisabled and RouteDraining they do not. A draining route's requests in flight
	// finish; the two differ only in what the operator means (the route is being taken
	// out, or is out).
	State string `json:"state,omitempty"`
}

// Balance is an account's balance in micro-SEK.
type Balance struct {
	AccountID string `json:"account"`
	MicroSEK  int64  `json:"micro_sek"`
}

// Limits are request-rate and concurrency limits; zero means unlimited.
type Limits struct {
	RequestsPerSecond float64 `json:"requests_per_second,omitempty"`
	Burst             int     `json:"burst,omitempty"`
	MaxConcurrent     int     `json:"max_concurrent,omitempty"`
	// HoldMaxPrice (an account's limits, or the defaults) makes the balance a cap on each
	// node: a request is admitted only when the balance the node knows, less what its
	// requests in flight hold, covers the request's maximum price, which it holds until its
	// record is priced. Off by default (a positive balance admits).
	HoldMaxPrice bool `json:"hold_max_price,omitempty"`
}

// ComputeHash returns the hex SHA-256 of c's JSON encoding. Producers must emit slices in
// a deterministic order (the control plane sorts by ID) for equal content to hash equally.
func ComputeHash(c *Content) (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("snapshot: encode content: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// ErrHashMismatch means a snapshot's content does not match its declared hash.
var ErrHashMismatch = errors.New("snapshot: content hash mismatch")

// Verify checks the snapshot's hash against its content.
func (s *Snapshot) Verify() error {
	h, err := ComputeHash(&s.Content)
	if err != nil {
		return err
	}
	if h != s.Hash {
		return fmt.Errorf("%w: version %d declares %s, content is %s", ErrHashMismatch, s.Version, s.Hash, h)
	}
	return nil
}
