package snapshot

// Where a key's or an account's effective limits come from.
const (
	SourceKey     = "key"     // the key's own limits
	SourceAccount = "account" // the account's own limits
	SourceDefault = "default" // the deployment's default limits (Content.DefaultLimits)
)

// EffectiveLimits returns the limits that apply to a key with limits key of an account with
// limits account (either nil when it has none of its own), and where they come from: the
// key's own when it has some, else the account's, else the deployment's defaults. For an
// account, pass a nil key. This is how nodes choose (dataplane/limits): a key with limits of
// its own is also held to its account's, which the operator sees on the account.
func EffectiveLimits(key, account *Limits, defaults Limits) (Limits, string) {
	switch {
	case key != nil:
		return *key, SourceKey
	case account != nil:
		return *account, SourceAccount
	}
	return defaults, SourceDefault
}
