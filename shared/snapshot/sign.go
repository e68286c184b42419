package snapshot

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Snapshots are signed by the control plane with ed25519 and verified by nodes on receipt
// and when read from disk. The signature covers the version, the generation and issue times
// and the content hash (which covers the content), so nothing a node serves from can be
// changed without the control plane's private key.
//
// Keys are PEM: the private key as PKCS #8 ("PRIVATE KEY", as written by
// `openssl genpkey -algorithm ed25519` and `gatewayctl snapshot keygen`), the public key as
// PKIX ("PUBLIC KEY", `openssl pkey -pubout`).

// signatureDomain separates snapshot signatures from any other use of the key.
const signatureDomain = "sekgate-snapshot-v1"

// ErrSignature means a snapshot's signature is missing or does not verify.
var ErrSignature = errors.New("snapshot: signature invalid")

// signedMessage is what the signature covers.
func (s *Snapshot) signedMessage() []byte {
	var b strings.Builder
	b.Grow(len(signatureDomain) + len(s.Hash) + 64)
	b.WriteString(signatureDomain)
	b.WriteByte('\n')
	b.WriteString(strconv.FormatInt(s.Version, 10))
	b.WriteByte('\n')
	b.WriteString(strconv.FormatInt(s.GeneratedAt.UnixNano(), 10))
	b.WriteByte('\n')
	b.WriteString(strconv.FormatInt(s.IssuedAt.UnixNano(), 10))
	b.WriteByte('\n')
	b.WriteString(s.Hash)
	return []byte(b.String())
}

// Sign sets s.Signature; s.Hash must already be the content's hash.
func (s *Snapshot) Sign(key ed25519.PrivateKey) {
	s.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(key, s.signedMessage()))
}

// VerifySignature checks s.Signature against key (it does not check the content hash;
// VerifySigned does both).
func (s *Snapshot) VerifySignature(key ed25519.PublicKey) error {
	if s.Signature == "" {
		return fmt.Errorf("%w: version %d is not signed", ErrSignature, s.Version)
	}
	sig, err := base64.StdEncoding.DecodeString(s.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("%w: version %d: malformed signature", ErrSignature, s.Version)
	}
	if len(key) != ed25519.PublicKeySize || !ed25519.Verify(key, s.signedMessage(), sig) {
		return fmt.Errorf("%w: version %d was not signed by the control plane's key", ErrSignature, s.Version)
	}
	return nil
}

// VerifySigned checks the content hash and the signature.
func (s *Snapshot) VerifySigned(key ed25519.PublicKey) error {
	if err := s.Verify(); err != nil {
		return err
	}
	return s.VerifySignature(key)
}

// StructureHash is the hash of the content without balances (nor the budgets' spend). It changes exactly when the
// version must: nodes and control-plane replicas compare it to tell whether a node holds
// the current snapshot (balances move on their own channel).
func StructureHash(c *Content) (string, error) {
	st := *c
	st.Balances, st.BalanceSeq, st.Spent = nil, 0, nil
	return ComputeHash(&st)
}

// Age is how long ago the snapshot was issued (signed) at now.
func (s *Snapshot) Age(now time.Time) time.Duration { return now.Sub(s.IssuedAt) }

// ParsePrivateKey reads an ed25519 private key: PEM PKCS #8, or a raw 32-byte seed
// encoded as 64 hex digits or standard base64 (surrounding white space ignored).
func ParsePrivateKey(b []byte) (ed25519.PrivateKey, error) {
	if blk, _ := pem.Decode(b); blk != nil {
		if blk.Type != "PRIVATE KEY" {
			return nil, fmt.Errorf("snapshot key: PEM block %q, want PRIVATE KEY (PKCS #8)", blk.Type)
		}
		k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("snapshot key: %w", err)
		}
		ek, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("snapshot key: %T is not an ed25519 key", k)
		}
		return ek, nil
	}
	seed, err := decodeRaw(b, ed25519.SeedSize)
	if err != nil {
		return nil, fmt.Errorf("snapshot key: %w", err)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// ReadPrivateKeyFile reads and parses the private key in the file at path.
func ReadPrivateKeyFile(path string) (ed25519.PrivateKey, error) {
	return readKeyFile(path, "snapshot signing key", ParsePrivateKey)
}

// ReadPublicKeyFile reads and parses the public key in the file at path.
func ReadPublicKeyFile(path string) (ed25519.PublicKey, error) {
	return readKeyFile(path, "snapshot public key", ParsePublicKey)
}

func readKeyFile[K any](path, what string, parse func([]byte) (K, error)) (K, error) {
	var zero K
	b, err := os.ReadFile(path)
	if err != nil {
		return zero, fmt.Errorf("read %s: %w", what, err)
	}
	k, err := parse(b)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// ParsePublicKey reads an ed25519 public key: PEM PKIX, or 32 raw bytes encoded as 64 hex
// digits or standard base64.
func ParsePublicKey(b []byte) (ed25519.PublicKey, error) {
	if blk, _ := pem.Decode(b); blk != nil {
		if blk.Type != "PUBLIC KEY" {
			return nil, fmt.Errorf("snapshot public key: PEM block %q, want PUBLIC KEY", blk.Type)
		}
		k, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("snapshot public key: %w", err)
		}
		ek, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("snapshot public key: %T is not an ed25519 key", k)
		}
		return ek, nil
	}
	raw, err := decodeRaw(b, ed25519.PublicKeySize)
	if err != nil {
		return nil, fmt.Errorf("snapshot public key: %w", err)
	}
	return ed25519.PublicKey(raw), nil
}

func decodeRaw(b []byte, n int) ([]byte, error) {
	s := strings.TrimSpace(string(b))
	if out, err := hex.DecodeString(s); err == nil && len(out) == n {
		return out, nil
	}
	if out, err := base64.StdEncoding.DecodeString(s); err == nil && len(out) == n {
		return out, nil
	}
	return nil, fmt.Errorf("want PEM, or %d bytes as hex or base64", n)
}

// MarshalKeyPair encodes key as PEM: the private key (PKCS #8) and its public key (PKIX).
func MarshalKeyPair(key ed25519.PrivateKey) (private, public []byte, err error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), nil
}
