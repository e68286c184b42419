package admit

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/telemetry"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/apikey"
)

// Principal is an authenticated caller.
type Principal struct {
	Idx  *index.Index
	Key  *index.Key
	Acct *index.Account
}

var bearerPrefix = []byte("bearer ")

// Authenticate finds the caller's key in the current snapshot. allowXAPIKey admits the
// x-api-key header when no Authorization header is present (Messages-style endpoints); an
// Authorization header always wins, valid or not. checkResidency refuses accounts whose
// policy no route of the deployment satisfies.
func (s *Admitter) Authenticate(ctx *fasthttp.RequestCtx, allowXAPIKey, checkResidency bool) (Principal, *apierror.Error) {
	idx := s.cfg.Store.Load()
	if idx == nil {
		return Principal{}, ErrNotReady
	}
	var secret []byte
	if len(ctx.Request.Header.PeekAll(fasthttp.HeaderAuthorization)) > 1 ||
		(allowXAPIKey && len(ctx.Request.Header.PeekAll("X-Api-Key")) > 1) {
		// Which one a proxy in front of the gateway would pick is anybody's guess.
		return Principal{}, ErrDuplicateAuth
	}
	if h := ctx.Request.Header.Peek(fasthttp.HeaderAuthorization); len(h) > 0 {
		if len(h) <= len(bearerPrefix) || !asciiEqualFold(h[:len(bearerPrefix)], bearerPrefix) {
			return Principal{}, ErrInvalidKey
		}
		secret = bytes.TrimSpace(h[len(bearerPrefix):])
	} else if allowXAPIKey {
		secret = bytes.TrimSpace(ctx.Request.Header.Peek("x-api-key"))
	}
	if len(secret) == 0 {
		return Principal{}, ErrMissingKey
	}
	k, ok := lookupSecret(idx, secret)
	if !ok {
		if k, ok = s.testBoxKey(ctx, idx, secret); !ok {
			return Principal{}, s.unknownKey(idx, secret)
		}
	}
	if !k.ExpiresAt.IsZero() && !s.cfg.Now().Before(k.ExpiresAt) {
		return Principal{}, expiredKey(k.ExpiresAt)
	}
	p := Principal{Idx: idx, Key: k, Acct: k.Account}
	if p.Acct.Suspended {
		return p, ErrSuspended
	}
	if e := s.residency.check(p.Acct.Residency, idx); e != nil {
		return p, e
	}
	if checkResidency && !p.Acct.Satisfiable {
		return p, ErrResidency
	}
	if c, ok := ctx.Conn().(connAuthenticator); ok {
		c.Authenticate(p.Acct.ID)
	}
	return p, nil
}

// connAuthenticator is the listener's connection (dataplane/edge): told of a valid key, it
// stops counting against its address's cap and counts against the account's.
type connAuthenticator interface{ Authenticate(account string) }

// PresentsKey reports whether the request carries a key of the current snapshot (without
// the checks Authenticate makes after finding it): such a request behind a trusted proxy
// is the account's, bounded by its limits, not a stranger counted per client address.
func (s *Admitter) PresentsKey(ctx *fasthttp.RequestCtx) bool {
	idx := s.cfg.Store.Load()
	if idx == nil {
		return false
	}
	secret := ctx.Request.Header.Peek(fasthttp.HeaderAuthorization)
	if len(secret) > len(bearerPrefix) && asciiEqualFold(secret[:len(bearerPrefix)], bearerPrefix) {
		secret = bytes.TrimSpace(secret[len(bearerPrefix):])
	} else {
		secret = bytes.TrimSpace(ctx.Request.Header.Peek("x-api-key"))
	}
	_, ok := lookupSecret(idx, secret)
	return ok
}

// lookupSecret finds the key a secret belongs to without allocating: the secret embeds its
// key ID, and the stored SHA-256 is compared in constant time. Secrets of other formats
// (other vendors' keys) never match.
func lookupSecret(idx *index.Index, secret []byte) (*index.Key, bool) {
	id, ok := secretKeyID(secret)
	if !ok {
		return nil, false
	}
	k, ok := idx.Key(string(id[:]))
	if !ok {
		return nil, false
	}
	if !apikey.Matches(apikey.HashBytes(secret), k.Hash) {
		return nil, false
	}
	return k, true
}

const secretPrefix, secretIDHex = "sgw_", 12

// secretKeyID returns the key ID a secret of this gateway's format embeds.
func secretKeyID(secret []byte) (id [4 + secretIDHex]byte, ok bool) {
	if len(secret) != apikey.SecretLen || string(secret[:len(secretPrefix)]) != secretPrefix || secret[len(secretPrefix)+secretIDHex] != '_' {
		return id, false
	}
	copy(id[:], "key_")
	copy(id[4:], secret[len(secretPrefix):len(secretPrefix)+secretIDHex])
	return id, true
}

// unknownKey is the answer to a secret the snapshot has no key for: 401 api_key_revoked
// when the snapshot lists it as recently revoked; 403 pointing at the region that serves
// the key's account when it lists it as served elsewhere (a node holds only its country's
// keys); else invalid key.
func (s *Admitter) unknownKey(idx *index.Index, secret []byte) *apierror.Error {
	id, ok := secretKeyID(secret)
	if !ok {
		return ErrInvalidKey
	}
	sum := apikey.HashBytes(secret)
	if at, ok := idx.Revoked(string(id[:]), sum[:4]); ok {
		return revokedKey(at)
	}
	if p, ok := idx.Elsewhere(string(id[:]), sum[:4]); ok {
		if e := s.residency.check(p, idx); e != nil {
			return e
		}
	}
	return ErrInvalidKey
}

func asciiEqualFold(a, lowerB []byte) bool {
	if len(a) != len(lowerB) {
		return false
	}
	for i := range a {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lowerB[i] {
			return false
		}
	}
	return true
}

// Inference authenticates an inference request and checks the account's balance and the
// account's and key's spend budgets (budget.go), counting a refusal in the metrics. p is
// set whenever the key was found.
func (s *Admitter) Inference(ctx *fasthttp.RequestCtx, allowXAPIKey bool) (Principal, *apierror.Error) {
	p, aerr := s.Authenticate(ctx, allowXAPIKey, true)
	if aerr != nil {
		s.refusedAuth(aerr)
		return p, aerr
	}
	if s.cfg.Balances.Spendable(p.Acct.ID) <= 0 {
		s.cfg.Telemetry.Refused(telemetry.RefuseBalance)
		return p, ErrBalance
	}
	if aerr := s.overBudget(p); aerr != nil {
		s.cfg.Telemetry.Refused(telemetry.RefuseBudget)
		return p, aerr
	}
	return p, nil
}

// refusedAuth counts an authentication refusal (a 503 not-ready is not one).
func (s *Admitter) refusedAuth(aerr *apierror.Error) {
	switch {
	case aerr.Status == 503:
	case aerr.Code == apierror.CodeResidencyUnsatisfied:
		s.cfg.Telemetry.Refused(telemetry.RefuseResidency)
	default:
		s.cfg.Telemetry.Refused(telemetry.RefuseAuth)
	}
}
