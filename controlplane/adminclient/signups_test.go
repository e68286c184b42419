package adminclient

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/controlplane/signup"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/controlplane/store/storetest"
	"github.com/sekgate/gateway/shared/apierror"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The client's signup calls against the control plane's own signup review on real
// Postgres: the server encodes and the client decodes adminapi's types.
func TestSignupsAgainstControlPlane(t *testing.T) {
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	st, _ := storetest.Open(t, store.Config{Logger: discard})
	ps := st
	form, err := signup.NewHandler(signup.Config{Store: ps, ConfirmURL: "https://example.com/ok",
		ErrorURL: "https://example.com/err", Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	vals := url.Values{"name": {"Ada Lovelace"}, "email": {"ada@example.com"}, "consent": {"yes"},
		"company": {"Analytical AB"}, "residency": {"se"}, "volume": {"1M tokens/day"}, "use_case": {"Notes."}}
	req := httptest.NewRequest(http.MethodPost, "/v1/service/signup", strings.NewReader(vals.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	form.ServeHTTP(rec, req)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "https://example.com/ok" {
		t.Fatalf("form: %d %q", rec.Code, rec.Header().Get("Location"))
	}

	adm, err := signup.NewAdmin(ps, discard)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	adm.Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}

	l, _, err := c.ListSignups(ctx, "pending", 10)
	if err != nil || len(l.Data) != 1 {
		t.Fatalf("list pending: %+v %v", l, err)
	}
	s := l.Data[0]
	if s.Email != "ada@example.com" || s.Company != "Analytical AB" || s.Residency != "se" || s.Status != "pending" ||
		s.ConsentedAt.IsZero() || s.CreatedAt.IsZero() || s.DecidedAt != nil || s.AccountID != nil {
		t.Fatalf("pending signup %+v", s)
	}
	got, _, err := c.ApproveSignup(ctx, s.ID, adminapi.ApproveSignupRequest{CreateAccount: true, Residency: "eu"})
	if err != nil || got.ID != s.ID || got.Status != "approved" || got.DecidedAt == nil || got.AccountID == nil {
		t.Fatalf("approve: %+v %v", got, err)
	}
	acct, err := st.GetAccount(ctx, *got.AccountID)
	if err != nil || acct.Residency != "eu" || acct.Customer != "Analytical AB" {
		t.Fatalf("account of the approved signup: %+v %v", acct, err)
	}
	if l, _, err := c.ListSignups(ctx, "", 10); err != nil || len(l.Data) != 1 || l.Data[0].Status != "approved" {
		t.Fatalf("list all: %+v %v", l, err)
	}
	if l, _, err := c.ListSignups(ctx, "pending", 10); err != nil || len(l.Data) != 0 {
		t.Fatalf("list pending after approval: %+v %v", l, err)
	}
	_, _, err = c.RejectSignup(ctx, s.ID)
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != http.StatusConflict || ae.Code != apierror.CodeConflict {
		t.Fatalf("reject an approved signup: %v", err)
	}
}
