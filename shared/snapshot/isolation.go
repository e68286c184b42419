package snapshot

// Cache isolation of a model (Model.CacheIsolation): whether the model servers' prefix
// caches are shared by every account or kept apart per account. Empty means
// CacheIsolationAccount.
const (
	// CacheIsolationAccount: requests of different accounts never share a server's cached
	// prefix (a per-account cache_salt on servers that honour it) nor a node's prefix
	// affinity key.
	CacheIsolationAccount = "account"
	// CacheIsolationShared: every account shares the prefix cache and affinity keys, so a
	// system prompt common to many accounts is prefilled once; an account can then time
	// whether another account's prompt is cached.
	CacheIsolationShared = "shared"
)

// KnownCacheIsolation reports whether v is a model's cache isolation (or empty: the
// default, account).
func KnownCacheIsolation(v string) bool {
	return v == "" || v == CacheIsolationAccount || v == CacheIsolationShared
}

// SharesCache reports whether m's prefix cache is shared by every account.
func (m *Model) SharesCache() bool { return m.CacheIsolation == CacheIsolationShared }
