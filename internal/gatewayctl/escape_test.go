package gatewayctl

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/signup"
)

func TestClean(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Ada Lovelace", "Ada Lovelace"},
		{"Åsa Öberg 日本", "Åsa Öberg 日本"},
		{"\x1b[2J\x1b]0;owned\x07", `\x1b[2J\x1b]0;owned\a`},
		{"line\r\nnext\ttab", `line\r\nnext\ttab`},
		{"del\x7f", `del\x7f`},
		{"c1\u009b31m", `c1\u009b31m`},
		{"evil\u202egpj.exe", `evil\u202egpj.exe`},
		{"iso\u2066x\u2069", `iso\u2066x\u2069`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"nul\x00", `nul\x00`},
	} {
		if got := clean(tc.in); got != tc.want {
			t.Errorf("clean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestJSONSafe(t *testing.T) {
	in := []byte("{\n  \"name\": \"a\u009bb\u202ec\",\n\t\"n\": 1\r\n}\n")
	got := jsonSafe(in)
	want := "{\n  \"name\": \"a\\u009bb\\u202ec\",\n\t\"n\": 1\r\n}\n"
	if string(got) != want {
		t.Fatalf("jsonSafe = %q, want %q", got, want)
	}
	var a, b map[string]any
	if json.Unmarshal(in, &a) != nil || json.Unmarshal(got, &b) != nil || a["name"] != b["name"] {
		t.Fatalf("value changed: %v vs %v", a, b)
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[31m", "a\u202eb", "\xff\xfe", "\u0085", "tab\there"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := clean(s)
		if !utf8.ValidString(got) {
			t.Fatalf("clean(%q) = %q is not valid UTF-8", s, got)
		}
		for _, r := range got {
			if adminapi.UnsafeRune(r) {
				t.Fatalf("clean(%q) = %q keeps %U", s, got, r)
			}
		}
		if !needsCleaning(s) && got != s {
			t.Fatalf("clean changed a safe string %q to %q", s, got)
		}
	})
}

// TestOutputEscapesControlCharacters: a signup whose fields carry terminal escape
// sequences (stored before the form refused them, or written by another client) is
// listed with the sequences escaped, in tables and in --json.
func TestOutputEscapesControlCharacters(t *testing.T) {
	rev := &fakeReviewer{items: map[string]*signup.Signup{
		"sgn_00000000000000e1": {ID: "sgn_00000000000000e1", Name: "Eve\x1b[2J\x1b]0;pwned\x07", Email: "eve@example.com",
			Company: "Evil\u202eBA", Residency: "se\u009b31m", UseCase: "a\r\nb", Status: signup.StatusPending,
			CreatedAt: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)},
	}}
	adm, err := signup.NewAdmin(rev, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	adm.Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, args := range [][]string{{"list"}, {"list", "--json"}} {
		out, err := runSignups(t, srv, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, r := range out {
			if r != '\n' && r != '\t' && adminapi.UnsafeRune(r) {
				t.Fatalf("%v: output keeps %U:\n%q", args, r, out)
			}
		}
		if !strings.Contains(out, "Eve") || !strings.Contains(out, `u202e`) {
			t.Fatalf("%v: output lost the escaped fields:\n%s", args, out)
		}
		if args[len(args)-1] != "--json" && !strings.Contains(out, `Eve\x1b[2J`) {
			t.Fatalf("table output does not show the escape:\n%s", out)
		}
	}
}
