package signup

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/controlplane/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type pgFixture struct {
	st    *store.Store
	ps    *store.Store
	h     *Handler
	mux   *http.ServeMux
	clock time.Time
}

func newPGFixture(t *testing.T) *pgFixture {
	t.Helper()
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := &pgFixture{clock: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	st, _ := storetest.Open(t, store.Config{Logger: discard,
		Now: func() time.Time { return f.clock }})
	f.st, f.ps = st, st
	f.h = newTestHandler(t, f.ps, time.Now)
	adm, err := NewAdmin(f.ps, discard)
	if err != nil {
		t.Fatal(err)
	}
	f.mux = http.NewServeMux()
	adm.Register(f.mux)
	return f
}

func (f *pgFixture) admin(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	w := httptest.NewRecorder()
	f.mux.ServeHTTP(w, httptest.NewRequest(method, path, strings.NewReader(body)))
	return w.Code, w.Body.Bytes()
}

func (f *pgFixture) list(t *testing.T, status string) []Signup {
	t.Helper()
	code, body := f.admin(t, http.MethodGet, "/admin/v1/signups?status="+status, "")
	if code != http.StatusOK {
		t.Fatalf("list %q: status %d %s", status, code, body)
	}
	var out struct{ Data []Signup }
	if err := json.Unmarshal(body, &out); err != nil || out.Data == nil {
		t.Fatalf("list body %s: %v", body, err)
	}
	return out.Data
}

func TestSignupStoredAndDeduplicated(t *testing.T) {
	f := newPGFixture(t)
	w := post(f.h, "203.0.113.5", formCT, validForm().Encode())
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != confirmURL {
		t.Fatalf("status %d Location %q", w.Code, w.Header().Get("Location"))
	}
	// The same email again (other case) and a bot: same answer, nothing more stored.
	again := validForm()
	again.Set("email", "ADA@example.com")
	bot := validForm()
	bot.Set("email", "bot@example.com")
	bot.Set("website", "https://spam.example")
	for _, v := range []string{again.Encode(), bot.Encode()} {
		w := post(f.h, "203.0.113.6", formCT, v)
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != confirmURL {
			t.Fatalf("status %d Location %q", w.Code, w.Header().Get("Location"))
		}
	}
	got := f.list(t, "")
	if len(got) != 1 {
		t.Fatalf("%d signups stored, want 1: %+v", len(got), got)
	}
	s := got[0]
	if s.Name != "Ada Lovelace" || s.Email != "ada@example.com" || s.Company != "Analytical AB" || s.Residency != "se" ||
		s.Volume != "1M tokens/day" || s.UseCase != "Summaries of engine notes." || s.ClientAddr != "203.0.113.5" ||
		s.Status != StatusPending || s.DecidedAt != nil || s.AccountID != nil || !strings.HasPrefix(s.ID, "sgn_") {
		t.Fatalf("stored signup %+v", s)
	}
	var n int
	if err := f.st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM accounts`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a signup created %d accounts (%v)", n, err)
	}
}

func TestSignupReview(t *testing.T) {
	f := newPGFixture(t)
	ctx := context.Background()
	submit := func(email, company, res string) Signup {
		v := validForm()
		v.Set("email", email)
		v.Set("company", company)
		v.Set("residency", res)
		if w := post(f.h, "203.0.113.9", formCT, v.Encode()); w.Header().Get("Location") != confirmURL {
			t.Fatalf("submit %s: Location %q", email, w.Header().Get("Location"))
		}
		f.clock = f.clock.Add(time.Minute)
		for _, s := range f.list(t, StatusPending) {
			if s.Email == email {
				return s
			}
		}
		t.Fatalf("signup %s not listed", email)
		return Signup{}
	}
	plain := submit("plain@example.com", "Plain AB", "se")
	withAcct := submit("acct@example.com", "", "eu")
	badRes := submit("badres@example.com", "Vague AB", "Sweden, ideally")
	rejected := submit("no@example.com", "", "")

	// Approval alone creates nothing.
	code, body := f.admin(t, http.MethodPost, "/admin/v1/signups/"+plain.ID+"/approve", "")
	var got Signup
	if code != http.StatusOK || json.Unmarshal(body, &got) != nil || got.Status != StatusApproved || got.AccountID != nil || got.DecidedAt == nil {
		t.Fatalf("approve without account: %d %s", code, body)
	}
	if accts, _ := f.st.ListAccounts(ctx); len(accts) != 0 {
		t.Fatalf("approval without create_account created %d accounts", len(accts))
	}

	// With create_account: customer is the name when no company was given; residency from the form.
	code, body = f.admin(t, http.MethodPost, "/admin/v1/signups/"+withAcct.ID+"/approve", `{"create_account": true}`)
	if code != http.StatusOK || json.Unmarshal(body, &got) != nil || got.AccountID == nil {
		t.Fatalf("approve with account: %d %s", code, body)
	}
	acct, err := f.st.GetAccount(ctx, *got.AccountID)
	if err != nil || acct.Customer != "Ada Lovelace" || acct.Residency != "eu" || acct.BalanceMicroSEK != 0 {
		t.Fatalf("created account %+v (%v)", acct, err)
	}
	// Repeating is idempotent: same account, no second one.
	code, body = f.admin(t, http.MethodPost, "/admin/v1/signups/"+withAcct.ID+"/approve", `{"create_account": true}`)
	var again Signup
	if code != http.StatusOK || json.Unmarshal(body, &again) != nil || again.AccountID == nil || *again.AccountID != *got.AccountID {
		t.Fatalf("repeated approve: %d %s", code, body)
	}

	// A residency that is not a policy must be given explicitly.
	code, body = f.admin(t, http.MethodPost, "/admin/v1/signups/"+badRes.ID+"/approve", `{"create_account": true}`)
	if code != http.StatusBadRequest || !strings.Contains(string(body), `"param":"residency"`) {
		t.Fatalf("approve with unusable residency: %d %s", code, body)
	}
	code, body = f.admin(t, http.MethodPost, "/admin/v1/signups/"+badRes.ID+"/approve", `{"create_account": true, "residency": "se"}`)
	if code != http.StatusOK || json.Unmarshal(body, &got) != nil || got.AccountID == nil {
		t.Fatalf("approve with explicit residency: %d %s", code, body)
	}
	if acct, err := f.st.GetAccount(ctx, *got.AccountID); err != nil || acct.Customer != "Vague AB" || acct.Residency != "se" {
		t.Fatalf("created account %+v (%v)", acct, err)
	}
	if accts, _ := f.st.ListAccounts(ctx); len(accts) != 2 {
		t.Fatalf("%d accounts, want 2", len(accts))
	}

	// Reject: pending -> rejected; an approved one cannot be rejected.
	code, body = f.admin(t, http.MethodPost, "/admin/v1/signups/"+rejected.ID+"/reject", "")
	if code != http.StatusOK || json.Unmarshal(body, &got) != nil || got.Status != StatusRejected || got.DecidedAt == nil {
		t.Fatalf("reject: %d %s", code, body)
	}
	if code, body = f.admin(t, http.MethodPost, "/admin/v1/signups/"+plain.ID+"/reject", ""); code != http.StatusConflict {
		t.Fatalf("reject approved: %d %s", code, body)
	}
	for _, path := range []string{"/admin/v1/signups/sgn_0000000000000000/approve", "/admin/v1/signups/nope/reject"} {
		if code, body = f.admin(t, http.MethodPost, path, ""); code != http.StatusNotFound {
			t.Fatalf("%s: %d %s", path, code, body)
		}
	}
	if code, _ = f.admin(t, http.MethodPost, "/admin/v1/signups/"+plain.ID+"/approve", `{"create_account": "yes"}`); code != http.StatusBadRequest {
		t.Fatalf("malformed approve body: %d", code)
	}
	if code, _ = f.admin(t, http.MethodGet, "/admin/v1/signups?status=weird", ""); code != http.StatusBadRequest {
		t.Fatalf("bad status filter: %d", code)
	}

	if n := len(f.list(t, StatusApproved)); n != 3 {
		t.Fatalf("%d approved, want 3", n)
	}
	if n := len(f.list(t, StatusRejected)); n != 1 {
		t.Fatalf("%d rejected, want 1", n)
	}
	if n := len(f.list(t, StatusPending)); n != 0 {
		t.Fatalf("%d pending, want 0", n)
	}
	all := f.list(t, "")
	if len(all) != 4 || all[0].ID != rejected.ID { // newest first
		t.Fatalf("list all: %+v", all)
	}
}
