package signup

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/store"
)

const (
	confirmURL = "https://site.example/signup/thanks"
	errorURL   = "https://site.example/signup/error?lang=sv"
)

type fakeStore struct {
	mu   sync.Mutex
	subs []store.SignupForm
	fail error
}

func (f *fakeStore) CreateSignup(_ context.Context, s store.SignupForm, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.subs = append(f.subs, s)
	return nil
}

func (f *fakeStore) count() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.subs) }

func validForm() url.Values {
	return url.Values{
		"name":      {"Ada Lovelace"},
		"email":     {"ada@example.com"},
		"consent":   {"yes"},
		"company":   {"Analytical AB"},
		"residency": {"se"},
		"volume":    {"1M tokens/day"},
		"use_case":  {"Summaries of engine notes."},
	}
}

func newTestHandler(t *testing.T, st Store, now func() time.Time) *Handler {
	t.Helper()
	h, err := NewHandler(Config{
		Store: st, ConfirmURL: confirmURL, ErrorURL: errorURL,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func post(h http.Handler, addr, contentType, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/v1/service/signup", strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	r.Header.Set("X-Forwarded-For", addr)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

const formCT = "application/x-www-form-urlencoded"

func wantErrorRedirect(code string) string {
	return "https://site.example/signup/error?error=" + code + "&lang=sv"
}

func TestSignupRedirects(t *testing.T) {
	tests := []struct {
		name   string
		ct     string
		body   func() string
		want   string
		stored bool
	}{
		{"happy path", formCT, func() string { return validForm().Encode() }, confirmURL, true},
		{"charset param", formCT + "; charset=UTF-8", func() string { return validForm().Encode() }, confirmURL, true},
		{"only required", formCT, func() string { return "name=A&email=a%40b.se&consent=yes" }, confirmURL, true},
		{"honeypot", formCT, func() string { v := validForm(); v.Set("website", "http://spam"); return v.Encode() }, confirmURL, false},
		{"name missing", formCT, func() string { v := validForm(); v.Del("name"); return v.Encode() }, wantErrorRedirect("name"), false},
		{"name blank", formCT, func() string { v := validForm(); v.Set("name", "   "); return v.Encode() }, wantErrorRedirect("name"), false},
		{"name too long", formCT, func() string { v := validForm(); v.Set("name", strings.Repeat("å", 201)); return v.Encode() }, wantErrorRedirect("name"), false},
		{"name 200 runes", formCT, func() string { v := validForm(); v.Set("name", strings.Repeat("å", 200)); return v.Encode() }, confirmURL, true},
		{"email missing", formCT, func() string { v := validForm(); v.Del("email"); return v.Encode() }, wantErrorRedirect("email"), false},
		{"email invalid", formCT, func() string { v := validForm(); v.Set("email", "not-an-email"); return v.Encode() }, wantErrorRedirect("email"), false},
		{"email display name", formCT, func() string { v := validForm(); v.Set("email", "Ada <ada@example.com>"); return v.Encode() }, wantErrorRedirect("email"), false},
		{"email angle brackets", formCT, func() string { v := validForm(); v.Set("email", "<ada@example.com>"); return v.Encode() }, wantErrorRedirect("email"), false},
		{"email too long", formCT, func() string {
			v := validForm()
			v.Set("email", strings.Repeat("a", 64)+"@"+strings.Repeat("b", 186)+".com")
			return v.Encode()
		}, wantErrorRedirect("email"), false},
		{"consent missing", formCT, func() string { v := validForm(); v.Del("consent"); return v.Encode() }, wantErrorRedirect("consent"), false},
		{"consent not yes", formCT, func() string { v := validForm(); v.Set("consent", "on"); return v.Encode() }, wantErrorRedirect("consent"), false},
		{"company too long", formCT, func() string { v := validForm(); v.Set("company", strings.Repeat("c", 201)); return v.Encode() }, wantErrorRedirect("company"), false},
		{"residency too long", formCT, func() string { v := validForm(); v.Set("residency", strings.Repeat("r", 201)); return v.Encode() }, wantErrorRedirect("residency"), false},
		{"volume too long", formCT, func() string { v := validForm(); v.Set("volume", strings.Repeat("v", 201)); return v.Encode() }, wantErrorRedirect("volume"), false},
		{"use_case too long", formCT, func() string { v := validForm(); v.Set("use_case", strings.Repeat("u", 4001)); return v.Encode() }, wantErrorRedirect("use_case"), false},
		{"use_case 4000", formCT, func() string { v := validForm(); v.Set("use_case", strings.Repeat("u", 4000)); return v.Encode() }, confirmURL, true},
		{"invalid utf-8", formCT, func() string { return "name=%FF&email=a%40b.se&consent=yes" }, wantErrorRedirect("name"), false},
		{"json body", "application/json", func() string { return `{"name":"A","email":"a@b.se","consent":"yes"}` }, wantErrorRedirect("unsupported_media_type"), false},
		{"no content type", "", func() string { return validForm().Encode() }, wantErrorRedirect("unsupported_media_type"), false},
		{"multipart", "multipart/form-data; boundary=x", func() string { return "--x--" }, wantErrorRedirect("unsupported_media_type"), false},
		{"latin-1 charset", formCT + "; charset=iso-8859-1", func() string { return validForm().Encode() }, wantErrorRedirect("unsupported_media_type"), false},
		{"bad escape", formCT, func() string { return "name=%zz&email=a%40b.se&consent=yes" }, wantErrorRedirect("invalid_form"), false},
		{"too large", formCT, func() string { return "use_case=" + strings.Repeat("x", MaxBody+1) }, wantErrorRedirect("too_large"), false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &fakeStore{}
			h := newTestHandler(t, st, time.Now)
			w := post(h, "192.0.2."+string(rune('0'+i%10)), tt.ct, tt.body())
			if w.Code != http.StatusSeeOther {
				t.Fatalf("status %d, want 303; body %s", w.Code, w.Body.String())
			}
			if got := w.Header().Get("Location"); got != tt.want {
				t.Errorf("Location = %q, want %q", got, tt.want)
			}
			if got := st.count(); got != map[bool]int{true: 1, false: 0}[tt.stored] {
				t.Errorf("stored %d submissions, want stored=%v", got, tt.stored)
			}
		})
	}
}

func TestSignupStoreFailure(t *testing.T) {
	h := newTestHandler(t, &fakeStore{fail: errors.New("db down")}, time.Now)
	w := post(h, "192.0.2.1", formCT, validForm().Encode())
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != wantErrorRedirect("unavailable") {
		t.Fatalf("status %d Location %q", w.Code, w.Header().Get("Location"))
	}
}

func TestSignupMethodNotAllowed(t *testing.T) {
	h := newTestHandler(t, &fakeStore{}, time.Now)
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(m, "/v1/service/signup", nil))
		var env struct{ Error struct{ Type, Code string } }
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "POST" ||
			json.Unmarshal(w.Body.Bytes(), &env) != nil || env.Error.Code != "method_not_allowed" {
			t.Errorf("%s: status %d Allow %q body %s", m, w.Code, w.Header().Get("Allow"), w.Body.String())
		}
	}
}

func TestSignupRateLimit(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	st := &fakeStore{}
	h := newTestHandler(t, st, clock)
	for i := 0; i < 5; i++ {
		if w := post(h, "198.51.100.7", formCT, validForm().Encode()); w.Code != http.StatusSeeOther {
			t.Fatalf("submission %d: status %d", i, w.Code)
		}
	}
	w := post(h, "198.51.100.7", formCT, validForm().Encode())
	var env struct{ Error struct{ Type, Code string } }
	if w.Code != http.StatusTooManyRequests || json.Unmarshal(w.Body.Bytes(), &env) != nil || env.Error.Type != "rate_limit_error" {
		t.Fatalf("6th submission: status %d body %s; want 429 rate_limit_error", w.Code, w.Body.String())
	}
	if ra := w.Header().Get("Retry-After"); ra != "12" {
		t.Errorf("Retry-After = %q, want 12 (one token per 12 s)", ra)
	}
	// Another address is not affected; the proxy's own entries before the last are ignored.
	if w := post(h, "198.51.100.7, 203.0.113.9", formCT, validForm().Encode()); w.Code != http.StatusSeeOther {
		t.Fatalf("other address: status %d", w.Code)
	}
	now = now.Add(12 * time.Second)
	if w := post(h, "198.51.100.7", formCT, validForm().Encode()); w.Code != http.StatusSeeOther {
		t.Fatalf("after refill: status %d", w.Code)
	}
	if st.count() != 7 {
		t.Fatalf("stored %d, want 7", st.count())
	}
}

func TestLimiterBounded(t *testing.T) {
	l := newLimiter(1, 1, 3)
	now := time.Now()
	for _, k := range []string{"a", "b", "c", "d"} {
		if ok, _ := l.allow(k, now); !ok {
			t.Fatalf("first request of %s refused", k)
		}
	}
	if l.len() != 3 {
		t.Fatalf("limiter tracks %d keys, want 3", l.len())
	}
	if ok, _ := l.allow("d", now); ok {
		t.Fatal("d allowed twice in a burst of 1")
	}
	if ok, _ := l.allow("a", now); !ok { // a was evicted, so it starts afresh
		t.Fatal("evicted key a refused")
	}
}

func TestNewHandlerValidates(t *testing.T) {
	for _, cfg := range []Config{
		{ConfirmURL: confirmURL, ErrorURL: errorURL},
		{Store: &fakeStore{}, ConfirmURL: "/thanks", ErrorURL: errorURL},
		{Store: &fakeStore{}, ConfirmURL: confirmURL},
	} {
		if _, err := NewHandler(cfg); err == nil {
			t.Errorf("NewHandler(%+v) accepted an invalid config", cfg)
		}
	}
}

func FuzzParseForm(f *testing.F) {
	f.Add(formCT, []byte(validForm().Encode()))
	f.Add(formCT, []byte("name=%zz"))
	f.Add("application/json", []byte(`{}`))
	f.Add(formCT+"; charset=utf-8", []byte("name=A&email=a%40b.se&consent=yes&website=x"))
	f.Add(formCT, []byte("email=%22a+b%22%40c.d&name=x&consent=yes"))
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		s, err := ParseForm(ct, body)
		if err != nil {
			var fe *FormError
			if !errors.As(err, &fe) || fe.Code == "" {
				t.Fatalf("error %v is not a FormError with a code", err)
			}
			return
		}
		if s.Name == "" || s.Email == "" {
			t.Fatalf("accepted a submission without name or email: %+v", s)
		}
		for _, f := range []struct {
			v   string
			max int
		}{{s.Name, MaxName}, {s.Email, MaxEmail}, {s.Company, MaxOther}, {s.Residency, MaxOther}, {s.Volume, MaxOther}, {s.UseCase, MaxUseCase}} {
			if len([]rune(f.v)) > f.max {
				t.Fatalf("accepted an over-long field %q", f.v)
			}
		}
		if strings.ContainsAny(s.Email, "<> ") {
			t.Fatalf("accepted a non-plain email %q", s.Email)
		}
	})
}
