package server

import (
	"bytes"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/apikey"
)

// principal is an authenticated caller.
type principal struct {
	idx  *index.Index
	key  *index.Key
	acct *index.Account
}

var bearerPrefix = []byte("bearer ")

// authenticate finds the caller's key in the current snapshot. allowXAPIKey admits the
// x-api-key header when no Authorization header is present (Messages-style endpoints); an
// Authorization header always wins, valid or not. checkResidency refuses accounts whose
// policy no route of the deployment satisfies.
func (s *Server) authenticate(ctx *fasthttp.RequestCtx, allowXAPIKey, checkResidency bool) (principal, *apierror.Error) {
	idx := s.cfg.Store.Load()
	if idx == nil {
		return principal{}, errNotReady
	}
	var secret []byte
	if len(ctx.Request.Header.PeekAll(fasthttp.HeaderAuthorization)) > 1 ||
		(allowXAPIKey && len(ctx.Request.Header.PeekAll("X-Api-Key")) > 1) {
		// Which one a proxy in front of the gateway would pick is anybody's guess.
		return principal{}, errDuplicateAuth
	}
	if h := ctx.Request.Header.Peek(fasthttp.HeaderAuthorization); len(h) > 0 {
		if len(h) <= len(bearerPrefix) || !asciiEqualFold(h[:len(bearerPrefix)], bearerPrefix) {
			return principal{}, errInvalidKey
		}
		secret = bytes.TrimSpace(h[len(bearerPrefix):])
	} else if allowXAPIKey {
		secret = bytes.TrimSpace(ctx.Request.Header.Peek("x-api-key"))
	}
	if len(secret) == 0 {
		return principal{}, errMissingKey
	}
	k, ok := lookupSecret(idx, secret)
	if !ok {
		if k, ok = s.testBoxKey(ctx, idx, secret); !ok {
			return principal{}, s.unknownKey(idx, secret)
		}
	}
	if !k.ExpiresAt.IsZero() && !s.now().Before(k.ExpiresAt) {
		return principal{}, expiredKey(k.ExpiresAt)
	}
	p := principal{idx: idx, key: k, acct: k.Account}
	if p.acct.Suspended {
		return p, errSuspended
	}
	if e := s.admission.check(p.acct.Residency, idx); e != nil {
		return p, e
	}
	if checkResidency && !p.acct.Satisfiable {
		return p, errResidency
	}
	if c, ok := ctx.Conn().(connAuthenticator); ok {
		c.Authenticate(p.acct.ID)
	}
	return p, nil
}

// connAuthenticator is the listener's connection (dataplane/edge): told of a valid key, it
// stops counting against its address's cap and counts against the account's.
type connAuthenticator interface{ Authenticate(account string) }

// presentsKey reports whether the request carries a key of the current snapshot (without
// the checks authenticate makes after finding it): such a request behind a trusted proxy
// is the account's, bounded by its limits, not a stranger counted per client address.
func (s *Server) presentsKey(ctx *fasthttp.RequestCtx) bool {
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
func (s *Server) unknownKey(idx *index.Index, secret []byte) *apierror.Error {
	id, ok := secretKeyID(secret)
	if !ok {
		return errInvalidKey
	}
	sum := apikey.HashBytes(secret)
	if at, ok := idx.Revoked(string(id[:]), sum[:4]); ok {
		return revokedKey(at)
	}
	if p, ok := idx.Elsewhere(string(id[:]), sum[:4]); ok {
		if e := s.admission.check(p, idx); e != nil {
			return e
		}
	}
	return errInvalidKey
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

// expiredKey is the 401 for a key past its expiry, saying when it expired.
func expiredKey(at time.Time) *apierror.Error {
	return apierror.New(401, apierror.TypeAuthentication, apierror.CodeAPIKeyExpired,
		"this API key expired at "+at.UTC().Format(time.RFC3339)+"; create a new key in the console")
}

// revokedKey is the 401 for a key the snapshot lists as revoked, saying when.
func revokedKey(at time.Time) *apierror.Error {
	return apierror.New(401, apierror.TypeAuthentication, apierror.CodeAPIKeyRevoked,
		"this API key was revoked at "+at.UTC().Format(time.RFC3339)+"; create a new key in the console")
}
