package apikey

import "testing"

func TestNewRoundTrip(t *testing.T) {
	id, secret, hash, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if !ValidID(id) {
		t.Fatalf("invalid id %q", id)
	}
	got, ok := IDFromSecret(secret)
	if !ok || got != id {
		t.Fatalf("IDFromSecret(%q)=%q,%v want %q", secret, got, ok, id)
	}
	stored, err := DecodeHash(hash)
	if err != nil {
		t.Fatal(err)
	}
	if !Matches(HashBytes([]byte(secret)), stored) {
		t.Fatal("secret does not match its hash")
	}
	if Matches(HashBytes([]byte(secret+"x")), stored) {
		t.Fatal("other secret matches")
	}
}

func TestValidID(t *testing.T) {
	for s, want := range map[string]bool{
		"key_0123456789ab":  true,
		"key_0123456789AB":  false,
		"key_0123456789a":   false,
		"key_0123456789abc": false,
		"kex_0123456789ab":  false,
		"key_01234567890g":  false,
		"":                  false,
	} {
		if ValidID(s) != want {
			t.Errorf("ValidID(%q) != %v", s, want)
		}
	}
}

func TestIDFromSecretRejectsForeignKeys(t *testing.T) {
	for _, s := range []string{
		"sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
		"sk-ant-api03-xxxxxxxx",
		"sgw_0123456789ab-0123456789012345678901234567890123456789",
		"sgw_0123456789AB_0123456789012345678901234567890123456789",
		"",
	} {
		if _, ok := IDFromSecret(s); ok {
			t.Errorf("accepted %q", s)
		}
	}
}

func FuzzIDFromSecret(f *testing.F) {
	f.Add("sgw_0123456789ab_0123456789012345678901234567890123456789")
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := IDFromSecret(s)
		if ok && !ValidID(id) {
			t.Fatalf("%q gave invalid id %q", s, id)
		}
	})
}
