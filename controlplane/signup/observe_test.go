package signup

import (
	"io"
	"log/slog"
	"net/url"
	"slices"
	"sync"
	"testing"
)

// OnSubmission is told every submission's outcome, with submissions stored in Postgres.
func TestOnSubmissionOutcomes(t *testing.T) {
	f := newPGFixture(t)
	var mu sync.Mutex
	var got []string
	cfg := Config{Store: f.ps, ConfirmURL: confirmURL, ErrorURL: errorURL, Burst: 4,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), OnSubmission: func(o string) { mu.Lock(); got = append(got, o); mu.Unlock() }}
	h, err := NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	honey := validForm()
	honey.Set("website", "http://spam.example")
	noConsent := validForm()
	noConsent.Del("consent")
	for _, body := range []url.Values{validForm(), noConsent, honey} {
		post(h, "192.0.2.7", formCT, body.Encode())
	}
	post(h, "192.0.2.7", formCT, "%zz") // not a form
	post(h, "192.0.2.7", formCT, validForm().Encode())
	want := []string{"received", "invalid", "honeypot", "invalid", "rate_limited"}
	if !slices.Equal(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
	if n := len(f.list(t, "")); n != 1 {
		t.Errorf("%d signups stored, want 1", n)
	}

	got = nil
	f.st.Close() // Postgres unreachable: the submission cannot be stored
	post(h, "192.0.2.8", formCT, validForm().Encode())
	if !slices.Equal(got, []string{"error"}) {
		t.Errorf("store failure: outcomes %v, want [error]", got)
	}
}
