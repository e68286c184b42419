package index

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
)

// CacheSaltBytes is the size of an account's cache salt before hex encoding: 128 bits, so
// no salt can be guessed, and fixed, so a server that appends other fields to the salt
// (SGLang joins cache_salt and extra_key) cannot be made to produce another account's.
const CacheSaltBytes = 16

// saltKeyLabel separates the cache-salt key from any other use of the secret it is
// derived from.
const saltKeyLabel = "sekgate/cache_salt/v1"

// SaltKey derives the key of the accounts' cache salts from a secret of the deployment
// (nodes pass their node token): HMAC-SHA256 of a fixed label keyed with the secret. Nodes
// with the same secret give every account the same salt, so its requests share the
// servers' cache whichever node sends them.
func SaltKey(secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(saltKeyLabel))
	return m.Sum(nil)
}

// salter computes cache salts with one HMAC state.
type salter struct {
	mac hash.Hash
	sum []byte
}

func newSalter(key []byte) *salter {
	return &salter{mac: hmac.New(sha256.New, key), sum: make([]byte, 0, sha256.Size)}
}

// salt is account id's cache salt: the first CacheSaltBytes of HMAC-SHA256(key, id), in
// hex. It is stable for the account and reveals nothing of its ID to a model server.
func (s *salter) salt(id string) string {
	s.mac.Reset()
	s.mac.Write([]byte(id))
	s.sum = s.mac.Sum(s.sum[:0])
	return hex.EncodeToString(s.sum[:CacheSaltBytes])
}
