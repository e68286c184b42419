package gatewayctl

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/signup"
)

// fakeReviewer keeps signups in memory behind the real admin handlers.
type fakeReviewer struct {
	items    map[string]*signup.Signup
	approved []signup.Approval
}

func (f *fakeReviewer) ListSignups(_ context.Context, status string, _ int) ([]signup.Signup, error) {
	out := []signup.Signup{}
	for _, s := range f.items {
		if status == "" || s.Status == status {
			out = append(out, *s)
		}
	}
	return out, nil
}

func (f *fakeReviewer) ApproveSignup(_ context.Context, id string, a signup.Approval) (signup.Signup, error) {
	s, ok := f.items[id]
	if !ok {
		return signup.Signup{}, signup.ErrNotFound
	}
	f.approved = append(f.approved, a)
	s.Status = signup.StatusApproved
	if a.CreateAccount {
		acct := "acct_00000000000000aa"
		s.AccountID = &acct
	}
	return *s, nil
}

func (f *fakeReviewer) RejectSignup(_ context.Context, id string) (signup.Signup, error) {
	s, ok := f.items[id]
	if !ok {
		return signup.Signup{}, signup.ErrNotFound
	}
	s.Status = signup.StatusRejected
	return *s, nil
}

func runSignups(t *testing.T, srv *httptest.Server, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	a := &app{adminURL: srv.URL, token: "admintok", out: &out, errOut: io.Discard, getenv: func(string) string { return "" }}
	cmd := a.signupsCmd()
	cmd.PersistentFlags().BoolVar(&a.jsonOut, "json", false, "")
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestSignupsCommands(t *testing.T) {
	rev := &fakeReviewer{items: map[string]*signup.Signup{
		"sgn_00000000000000a1": {ID: "sgn_00000000000000a1", Name: "Ada", Email: "ada@example.com", Company: "Analytical AB",
			Residency: "se", Status: signup.StatusPending, CreatedAt: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)},
	}}
	adm, err := signup.NewAdmin(rev, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	adm.Register(mux)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer admintok" {
			http.Error(w, `{"error":{"type":"authentication_error","message":"no"}}`, http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	defer srv.Close()

	out, err := runSignups(t, srv, "list")
	if err != nil || !strings.Contains(out, "sgn_00000000000000a1") || !strings.Contains(out, "ada@example.com") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	out, err = runSignups(t, srv, "approve", "sgn_00000000000000a1", "--create-account", "--residency", "eu")
	if err != nil || !strings.Contains(out, "acct_00000000000000aa") || !strings.Contains(out, "approved") {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	if len(rev.approved) != 1 || !rev.approved[0].CreateAccount || rev.approved[0].Residency != "eu" {
		t.Fatalf("approval sent %+v", rev.approved)
	}
	out, err = runSignups(t, srv, "list", "--status", "pending")
	if err != nil || strings.Contains(out, "sgn_00000000000000a1") {
		t.Fatalf("pending list after approval: %v\n%s", err, out)
	}
	out, err = runSignups(t, srv, "list", "--status", "all", "--json")
	if err != nil || !strings.Contains(out, `"status": "approved"`) {
		t.Fatalf("list --json: %v\n%s", err, out)
	}
	if _, err = runSignups(t, srv, "reject", "sgn_0000000000000404"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("reject unknown: %v", err)
	}
	if _, err = runSignups(t, srv, "approve", "sgn_00000000000000a1", "--residency", "se"); err == nil {
		t.Fatal("--residency without --create-account accepted")
	}
	if _, err = runSignups(t, srv, "list", "--status", "odd"); err == nil {
		t.Fatal("--status odd accepted")
	}
}
