package signup

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestSignupRefusesControlCharacters: every text field refuses terminal control
// characters with the error redirect naming the field; use_case keeps line breaks.
func TestSignupRefusesControlCharacters(t *testing.T) {
	for _, field := range []string{"name", "email", "company", "residency", "volume", "use_case"} {
		for _, bad := range []string{"\x1b[2J", "\x07", "\x00", "\x7f", "\u009b31m", "a\u202eb", "\u2066x", "\x08"} {
			st := &fakeStore{}
			h := newTestHandler(t, st, time.Now)
			v := validForm()
			v.Set(field, v.Get(field)+bad)
			if field == "email" {
				v.Set(field, "ada"+bad+"@example.com")
			}
			w := post(h, "192.0.2.200", formCT, v.Encode())
			if w.Code != http.StatusSeeOther || w.Header().Get("Location") != wantErrorRedirect(field) {
				t.Errorf("%s with %q: status %d Location %q, want the %s error", field, bad, w.Code, w.Header().Get("Location"), field)
			}
			if st.count() != 0 {
				t.Errorf("%s with %q: stored", field, bad)
			}
		}
	}
	for _, field := range []string{"name", "company", "residency", "volume"} {
		v := validForm()
		v.Set(field, "a\r\nb")
		if _, err := ParseForm(formCT, []byte(v.Encode())); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("line break in %s: %v, want a refusal", field, err)
		}
	}
	v := validForm()
	v.Set("use_case", "line one\r\n\tline two\nthree")
	if s, err := ParseForm(formCT, []byte(v.Encode())); err != nil || !strings.Contains(s.UseCase, "\n\tline two") {
		t.Fatalf("multi-line use_case: %+v %v", s, err)
	}
}

func TestRateKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"198.51.100.7", "198.51.100.7"},
		{"::ffff:198.51.100.7", "198.51.100.7"},
		{"198.51.100.7:4431", "198.51.100.7"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2::9]:443", "2001:db8:1:2::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"not an address", "not an address"},
	} {
		if got := RateKey(tc.in); got != tc.want {
			t.Errorf("RateKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzRateKey(f *testing.F) {
	for _, s := range []string{"198.51.100.7", "2001:db8::1", "[::1]:80", "::ffff:1.2.3.4", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := RateKey(s)
		if ip, err := netip.ParseAddr(s); err == nil && ip.Unmap().Is6() {
			p, err := netip.ParsePrefix(k)
			if err != nil || p.Bits() != 64 || !p.Contains(ip.WithZone("")) {
				t.Fatalf("RateKey(%q) = %q is not the address's /64", s, k)
			}
		}
	})
}

// TestSignupRateLimitPerIPv6Prefix: addresses of one /64 share a bucket; another /64
// has its own.
func TestSignupRateLimitPerIPv6Prefix(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	h := newTestHandler(t, &fakeStore{}, func() time.Time { return now })
	for i := 0; i < 5; i++ {
		addr := "2001:db8:aa:bb::" + string(rune('1'+i))
		if w := post(h, addr, formCT, validForm().Encode()); w.Code != http.StatusSeeOther {
			t.Fatalf("submission %d from %s: status %d", i, addr, w.Code)
		}
	}
	if w := post(h, "2001:db8:aa:bb:ffff:1:2:3", formCT, validForm().Encode()); w.Code != http.StatusTooManyRequests {
		t.Fatalf("6th submission from the same /64: status %d, want 429", w.Code)
	}
	if w := post(h, "2001:db8:aa:bc::1", formCT, validForm().Encode()); w.Code != http.StatusSeeOther {
		t.Fatalf("another /64: status %d, want 303", w.Code)
	}
}
