package index

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/internal/fixture"
)

func TestCacheSalts(t *testing.T) {
	s, _ := fixture.Snapshot(7, "http://127.0.0.1:1/v1", time.Unix(1_800_000_000, 0))
	key := SaltKey("node-token-0123456789abcdef0123456789")
	x, err := BuildKeyed(s, key)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, sa := range s.Accounts {
		a, _ := x.Account(sa.ID)
		salt := a.CacheSalt
		if len(salt) != 2*CacheSaltBytes || strings.Contains(salt, sa.ID) {
			t.Errorf("account %s: salt %q", sa.ID, salt)
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(sa.ID))
		if want := hex.EncodeToString(m.Sum(nil)[:CacheSaltBytes]); salt != want {
			t.Errorf("account %s: salt %s, want HMAC-SHA256 prefix %s", sa.ID, salt, want)
		}
		if other, dup := seen[salt]; dup {
			t.Errorf("accounts %s and %s share salt %s", other, sa.ID, salt)
		}
		seen[salt] = sa.ID
	}
	// Stable for the same key (another node, the next snapshot); another key, other salts.
	again, _ := BuildKeyed(s, SaltKey("node-token-0123456789abcdef0123456789"))
	other, _ := BuildKeyed(s, SaltKey("another-token-0123456789abcdef012345"))
	a1, _ := x.Account(fixture.AcctSE)
	a2, _ := again.Account(fixture.AcctSE)
	a3, _ := other.Account(fixture.AcctSE)
	if a1.CacheSalt != a2.CacheSalt || a1.CacheSalt == a3.CacheSalt {
		t.Fatalf("salts %s, %s (same key), %s (other key)", a1.CacheSalt, a2.CacheSalt, a3.CacheSalt)
	}
}
