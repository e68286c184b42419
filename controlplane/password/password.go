// Package password hashes and checks operator passwords with Argon2id (RFC 9106), stored
// as PHC strings: $argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<hash> (unpadded
// base64). The parameters are OWASP's minimum for Argon2id (19 MiB, 2 passes, 1 lane);
// Check reads them from the stored string, so stronger ones can be adopted later.
package password

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

const (
	memoryKiB = 19 * 1024
	passes    = 2
	lanes     = 1
	saltLen   = 16
	keyLen    = 32
	// MinLength and MaxLength bound a password in bytes.
	MinLength = 12
	MaxLength = 256
)

var b64 = base64.RawStdEncoding

// ErrWeak is returned by Hash for a password outside MinLength..MaxLength.
var ErrWeak = fmt.Errorf("a password must be %d to %d bytes", MinLength, MaxLength)

// Hash returns the PHC string of a new salted Argon2id hash of pw.
func Hash(pw string) (string, error) {
	if len(pw) < MinLength || len(pw) > MaxLength {
		return "", ErrWeak
	}
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(pw), salt, passes, memoryKiB, lanes, keyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, memoryKiB, passes, lanes,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// dummy is checked against when there is no stored hash, so an unknown operator costs the
// same time as a wrong password.
var dummy, _ = Hash("no-such-operator-password")

// Check reports whether pw matches the PHC string stored; an empty or malformed stored
// string never matches (and still costs one hash).
func Check(stored, pw string) bool {
	p, err := parse(stored)
	if err != nil {
		p, _ = parse(dummy)
		p.never = true
	}
	if len(pw) > MaxLength {
		pw = pw[:MaxLength]
		p.never = true
	}
	got := argon2.IDKey([]byte(pw), p.salt, p.t, p.m, p.p, uint32(len(p.key)))
	return subtle.ConstantTimeCompare(got, p.key) == 1 && !p.never
}

type params struct {
	m, t      uint32
	p         uint8
	salt, key []byte
	never     bool
}

func parse(s string) (params, error) {
	var p params
	f := strings.Split(s, "$")
	if len(f) != 6 || f[0] != "" || f[1] != "argon2id" || f[2] != fmt.Sprintf("v=%d", argon2.Version) {
		return p, errors.New("not an argon2id PHC string")
	}
	if _, err := fmt.Sscanf(f[3], "m=%d,t=%d,p=%d", &p.m, &p.t, &p.p); err != nil {
		return p, fmt.Errorf("argon2id parameters: %w", err)
	}
	// Bounds keep a tampered row from costing unbounded memory or time.
	if p.m < 8*1024 || p.m > 256*1024 || p.t < 1 || p.t > 10 || p.p < 1 || p.p > 8 {
		return p, errors.New("argon2id parameters out of range")
	}
	var err error
	if p.salt, err = b64.DecodeString(f[4]); err != nil || len(p.salt) < 8 {
		return p, errors.New("argon2id salt")
	}
	if p.key, err = b64.DecodeString(f[5]); err != nil || len(p.key) < 16 || len(p.key) > 64 {
		return p, errors.New("argon2id hash")
	}
	return p, nil
}
