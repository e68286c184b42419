package password

import (
	"strings"
	"testing"
)

func TestHashAndCheck(t *testing.T) {
	h, err := Hash("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q", h)
	}
	h2, _ := Hash("correct horse battery")
	if h == h2 {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	tests := []struct {
		name, stored, pw string
		want             bool
	}{
		{"right", h, "correct horse battery", true},
		{"wrong", h, "correct horse batterz", false},
		{"prefix", h, "correct horse", false},
		{"empty stored", "", "correct horse battery", false},
		{"malformed", "$argon2id$v=19$m=x$y$z", "correct horse battery", false},
		{"huge memory", strings.Replace(h, "m=19456", "m=9999999", 1), "correct horse battery", false},
		{"too long", h, strings.Repeat("a", MaxLength+1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Check(tt.stored, tt.pw); got != tt.want {
				t.Fatalf("Check = %v, want %v", got, tt.want)
			}
		})
	}
	for _, weak := range []string{"", "short", strings.Repeat("x", MaxLength+1)} {
		if _, err := Hash(weak); err == nil {
			t.Fatalf("Hash(%d bytes) accepted", len(weak))
		}
	}
}

func FuzzCheck(f *testing.F) {
	h, _ := Hash("fuzz password 123")
	f.Add(h, "fuzz password 123")
	f.Add("$argon2id$v=19$m=8192,t=1,p=1$AAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA", "x")
	f.Fuzz(func(t *testing.T, stored, pw string) {
		_ = Check(stored, pw) // must not panic or allocate without bound
	})
}
