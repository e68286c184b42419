// Package apikey defines the API key format both planes agree on.
//
// A key has a public ID "key_<12 lowercase hex>" and a secret "sgw_<12 hex>_<40 hex>" that
// embeds the ID's hex part, so a node can find the key in its snapshot without a scan.
// Only the SHA-256 of the secret is stored or shipped; the secrets are 160-bit random
// values, so a fast hash is appropriate (no password stretching is needed).
package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
)

const (
	idPrefix     = "key_"
	secretPrefix = "sgw_"
	idHexLen     = 12
	randHexLen   = 40
	// SecretLen is the length of a well-formed secret.
	SecretLen = len(secretPrefix) + idHexLen + 1 + randHexLen
)

// Minimum and maximum key lifetime in days when an expiry is set.
const (
	MinExpiryDays = 30
	MaxExpiryDays = 365
)

// ValidID reports whether s is a public key ID: "key_" followed by 12 lowercase hex digits.
func ValidID(s string) bool {
	if len(s) != len(idPrefix)+idHexLen || s[:len(idPrefix)] != idPrefix {
		return false
	}
	return isLowerHex(s[len(idPrefix):])
}

// IDFromSecret returns the public key ID a secret claims, or false if the secret is not
// of this service's format (other vendors' keys never parse).
func IDFromSecret(secret string) (string, bool) {
	if len(secret) != SecretLen || secret[:len(secretPrefix)] != secretPrefix {
		return "", false
	}
	idHex := secret[len(secretPrefix) : len(secretPrefix)+idHexLen]
	if secret[len(secretPrefix)+idHexLen] != '_' || !isLowerHex(idHex) || !isLowerHex(secret[len(secretPrefix)+idHexLen+1:]) {
		return "", false
	}
	return idPrefix + idHex, true
}

// Hash returns the hex SHA-256 of a secret, the only form in which it is stored.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// HashBytes is Hash for a byte slice, without allocating a string for the input.
func HashBytes(secret []byte) [sha256.Size]byte {
	return sha256.Sum256(secret)
}

// Matches reports in constant time whether secret hashes to the stored sum.
func Matches(sum [sha256.Size]byte, stored [sha256.Size]byte) bool {
	return subtle.ConstantTimeCompare(sum[:], stored[:]) == 1
}

// DecodeHash parses a hex SHA-256 as stored.
func DecodeHash(h string) ([sha256.Size]byte, error) {
	var out [sha256.Size]byte
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != sha256.Size {
		return out, fmt.Errorf("apikey: bad hash %q", h)
	}
	copy(out[:], b)
	return out, nil
}

// New makes a fresh key: its public ID, its secret (shown once) and the hash to store.
func New() (id, secret, hash string, err error) {
	buf := make([]byte, idHexLen/2+randHexLen/2)
	if _, err = rand.Read(buf); err != nil {
		return "", "", "", fmt.Errorf("apikey: random: %w", err)
	}
	idHex := hex.EncodeToString(buf[:idHexLen/2])
	secret = secretPrefix + idHex + "_" + hex.EncodeToString(buf[idHexLen/2:])
	return idPrefix + idHex, secret, Hash(secret), nil
}

func isLowerHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
