package routing

import (
	"testing"

	"github.com/cespare/xxhash/v2"
)

// With a tenant (account cache isolation) two accounts' identical prompts get different
// keys; without one (shared) the key is the model's and the prompt's alone, as it was
// before tenants.
func TestPrefixKeyTenant(t *testing.T) {
	prompt, cacheKey := []byte(`{"role":"system","content":"You are a helpful assistant."}`), []byte("conv-7")
	type in struct {
		tenant   string
		cacheKey []byte
	}
	for _, tc := range []struct {
		name string
		a, b in
		same bool
	}{
		{"shared, same prompt", in{"", nil}, in{"", nil}, true},
		{"same account", in{"acct_a", nil}, in{"acct_a", nil}, true},
		{"two accounts", in{"acct_a", nil}, in{"acct_b", nil}, false},
		{"account and shared", in{"acct_a", nil}, in{"", nil}, false},
		{"two accounts, same prompt_cache_key", in{"acct_a", cacheKey}, in{"acct_b", cacheKey}, false},
		{"same account, same prompt_cache_key", in{"acct_a", cacheKey}, in{"acct_a", cacheKey}, true},
	} {
		ka, oka := PrefixKey("m", tc.a.tenant, tc.a.cacheKey, prompt)
		kb, okb := PrefixKey("m", tc.b.tenant, tc.b.cacheKey, prompt)
		if !oka || !okb || (ka == kb) != tc.same {
			t.Errorf("%s: keys %x, %x (ok %v %v), want same %v", tc.name, ka, kb, oka, okb, tc.same)
		}
	}
	want := xxhash.Sum64(append([]byte("m\x00\x02"), prompt...))
	if got, _ := PrefixKey("m", "", nil, prompt); got != want {
		t.Fatalf("shared key %x, want %x (unchanged)", got, want)
	}
	if _, ok := PrefixKey("m", "acct_a", nil, nil); ok {
		t.Fatal("a tenant alone makes a key")
	}
}
