package server

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/catalog"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/apikey"
)

// principal is an authenticated caller.
type principal struct {
	idx  *catalog.Index
	key  *catalog.Key
	acct *catalog.Account
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
		return principal{}, errInvalidKey
	}
	if !k.ExpiresAt.IsZero() && !s.now().Before(k.ExpiresAt) {
		return principal{}, errExpiredKey
	}
	p := principal{idx: idx, key: k, acct: k.Account}
	if p.acct.Suspended {
		return p, errSuspended
	}
	if e := s.admission.check(p.acct.Residency); e != nil {
		return p, e
	}
	if checkResidency && !p.acct.Satisfiable {
		return p, errResidency
	}
	return p, nil
}

// lookupSecret finds the key a secret belongs to without allocating: the secret embeds its
// key ID, and the stored SHA-256 is compared in constant time. Secrets of other formats
// (other vendors' keys) never match.
func lookupSecret(idx *catalog.Index, secret []byte) (*catalog.Key, bool) {
	const pfx, idHex = "sgw_", 12
	if len(secret) != apikey.SecretLen || string(secret[:len(pfx)]) != pfx || secret[len(pfx)+idHex] != '_' {
		return nil, false
	}
	var id [4 + idHex]byte
	copy(id[:], "key_")
	copy(id[4:], secret[len(pfx):len(pfx)+idHex])
	k, ok := idx.Key(string(id[:]))
	if !ok {
		return nil, false
	}
	if !apikey.Matches(apikey.HashBytes(secret), k.Hash) {
		return nil, false
	}
	return k, true
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
