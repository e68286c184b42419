package snapshot

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func signedFixture(t testing.TB, key ed25519.PrivateKey) *Snapshot {
	t.Helper()
	s := &Snapshot{Version: 7, GeneratedAt: time.Date(2026, 11, 1, 10, 0, 0, 123456000, time.UTC),
		IssuedAt: time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC),
		Content: Content{Accounts: []Account{{ID: "acct_1", Residency: "se", Models: []string{"m"}}},
			Keys:   []Key{{ID: "key_000000000001", AccountID: "acct_1", Hash: "ab"}},
			Models: []Model{{ID: "m", Endpoint: EndpointChat}}, Routes: []Route{}, Balances: []Balance{{AccountID: "acct_1", MicroSEK: 5}}}}
	var err error
	if s.Hash, err = ComputeHash(&s.Content); err != nil {
		t.Fatal(err)
	}
	s.Sign(key)
	return s
}

func TestSignVerify(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	otherPub, _, _ := ed25519.GenerateKey(rand.Reader)
	s := signedFixture(t, priv)
	// Through JSON, as on the wire and on disk.
	b, _ := json.Marshal(s)
	var got Snapshot
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if err := got.VerifySigned(pub); err != nil {
		t.Fatalf("genuine snapshot refused: %v", err)
	}
	tamper := []struct {
		name string
		edit func(s *Snapshot)
		want error
	}{
		{"added key, hash recomputed", func(s *Snapshot) {
			s.Keys = append(s.Keys, Key{ID: "key_00000000000f", AccountID: "acct_1", Hash: "cd"})
			s.Hash, _ = ComputeHash(&s.Content)
		}, ErrSignature},
		{"added key, hash kept", func(s *Snapshot) { s.Keys = append(s.Keys, Key{ID: "key_00000000000f"}) }, ErrHashMismatch},
		{"version", func(s *Snapshot) { s.Version++ }, ErrSignature},
		{"issued later", func(s *Snapshot) { s.IssuedAt = s.IssuedAt.Add(time.Hour) }, ErrSignature},
		{"generated", func(s *Snapshot) { s.GeneratedAt = s.GeneratedAt.Add(time.Nanosecond) }, ErrSignature},
		{"no signature", func(s *Snapshot) { s.Signature = "" }, ErrSignature},
		{"garbage signature", func(s *Snapshot) { s.Signature = "!!" }, ErrSignature},
		{"short signature", func(s *Snapshot) { s.Signature = base64.StdEncoding.EncodeToString([]byte("x")) }, ErrSignature},
	}
	for _, tt := range tamper {
		t.Run(tt.name, func(t *testing.T) {
			var c Snapshot
			_ = json.Unmarshal(b, &c)
			tt.edit(&c)
			if err := c.VerifySigned(pub); !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
		})
	}
	if err := got.VerifySigned(otherPub); !errors.Is(err, ErrSignature) {
		t.Fatalf("other key accepted: %v", err)
	}
}

func TestKeyFormats(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	privPEM, pubPEM, err := MarshalKeyPair(priv)
	if err != nil {
		t.Fatal(err)
	}
	seed := priv.Seed()
	for name, in := range map[string][]byte{
		"pem": privPEM, "hex": []byte(hex.EncodeToString(seed) + "\n"), "base64": []byte(base64.StdEncoding.EncodeToString(seed)),
	} {
		k, err := ParsePrivateKey(in)
		if err != nil || !k.Equal(priv) {
			t.Fatalf("private %s: %v", name, err)
		}
	}
	for name, in := range map[string][]byte{
		"pem": pubPEM, "hex": []byte(hex.EncodeToString(pub)), "base64": []byte(base64.StdEncoding.EncodeToString(pub) + "\n"),
	} {
		k, err := ParsePublicKey(in)
		if err != nil || !k.Equal(pub) {
			t.Fatalf("public %s: %v", name, err)
		}
	}
	for name, in := range map[string][]byte{"empty": nil, "short hex": []byte("abcd"), "public as private": pubPEM} {
		if _, err := ParsePrivateKey(in); err == nil {
			t.Fatalf("private %s accepted", name)
		}
	}
	if _, err := ParsePublicKey(privPEM); err == nil {
		t.Fatal("private PEM accepted as public key")
	}
}

func FuzzVerifySigned(f *testing.F) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	b, _ := json.Marshal(signedFixture(f, priv))
	f.Add(b)
	f.Add([]byte(`{"version":1,"signature":"AAAA"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var s Snapshot
		if json.Unmarshal(in, &s) != nil {
			return
		}
		if err := s.VerifySigned(pub); err == nil && string(in) != string(b) {
			// Only re-encodings of the genuine snapshot may verify.
			if h, _ := ComputeHash(&s.Content); h != s.Hash || s.Version != 7 {
				t.Fatalf("forged snapshot verified: %s", in)
			}
		}
	})
}

func FuzzParseKeys(f *testing.F) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	a, b, _ := MarshalKeyPair(priv)
	f.Add(a)
	f.Add(b)
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		if k, err := ParsePrivateKey(in); err == nil && len(k) != ed25519.PrivateKeySize {
			t.Fatalf("private key of %d bytes", len(k))
		}
		if k, err := ParsePublicKey(in); err == nil && len(k) != ed25519.PublicKeySize {
			t.Fatalf("public key of %d bytes", len(k))
		}
	})
}
