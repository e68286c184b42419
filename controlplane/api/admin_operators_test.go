package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/controlplane/store/storetest"
	"github.com/sekgate/gateway/shared/usage"
)

// login creates an operator with the admin token and returns a session token.
func (e *env) login(name, role string) string {
	e.t.Helper()
	pw := "password-of-" + name
	e.mustStatus(e.admin("POST", "/admin/v1/operators", adminapi.CreateOperatorRequest{Name: name, Role: role, Password: pw}), 201)
	var s adminapi.Session
	e.mustStatus(e.do("POST", "/admin/v1/sessions", "", adminapi.LoginRequest{Name: name, Password: pw}, nil), 201).json(e.t, &s)
	if !strings.HasPrefix(s.Token, store.SessionTokenPrefix) || len(s.CSRFToken) != 64 || s.Role != role {
		e.t.Fatalf("session %+v", s)
	}
	return s.Token
}

func TestOperatorRoles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	viewer, op, adm := e.login("vera", "viewer"), e.login("otto", "operator"), e.login("ada", "admin")
	acct := e.createAccount("Roles AB", "se")

	tests := []struct {
		name, method, path string
		body               any
		want               map[string]int // token name -> status
	}{
		{"read accounts", "GET", "/admin/v1/accounts", nil, map[string]int{"viewer": 200, "operator": 200, "admin": 200}},
		{"read audit", "GET", "/admin/v1/audit", nil, map[string]int{"viewer": 200, "operator": 200, "admin": 200}},
		{"create account", "POST", "/admin/v1/accounts", map[string]string{"customer": "X", "residency": "se"},
			map[string]int{"viewer": 403, "operator": 201, "admin": 201}},
		{"credit", "POST", "/admin/v1/accounts/" + acct + "/credits", map[string]string{"amount_sek": "1.00"},
			map[string]int{"viewer": 403, "operator": 200, "admin": 200}},
		{"suspend", "PATCH", "/admin/v1/accounts/" + acct, map[string]bool{"suspended": false},
			map[string]int{"viewer": 403, "operator": 200, "admin": 200}},
		{"catalogue", "PUT", "/admin/v1/catalog", testCatalog, map[string]int{"viewer": 403, "operator": 403, "admin": 200}},
		{"operators", "POST", "/admin/v1/operators", nil, map[string]int{"viewer": 403, "operator": 403}},
	}
	tokens := map[string]string{"viewer": viewer, "operator": op, "admin": adm}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for who, want := range tt.want {
				if r := e.do(tt.method, tt.path, tokens[who], tt.body, nil); r.status != want {
					t.Errorf("%s: status %d, want %d: %s", who, r.status, want, r.body)
				} else if want == 403 {
					if typ, code, _ := r.errInfo(t); typ != "permission_error" || code != "role_insufficient" {
						t.Errorf("%s: error %s %s", who, typ, code)
					}
				}
			}
		})
	}
	// Refused changes are audited too, with the viewer as actor.
	var page adminapi.AuditPage
	e.mustStatus(e.do("GET", "/admin/v1/audit?actor=operator:vera", viewer, nil, nil), 200).json(t, &page)
	if len(page.Data) < 4 {
		t.Fatalf("viewer's refused changes in the audit log: %d", len(page.Data))
	}
	for _, a := range page.Data {
		if a.Status != 403 || a.Role != "viewer" {
			t.Errorf("viewer audit entry %+v", a)
		}
	}
	// No token, a wrong one, a logged-out session, a disabled operator: 401.
	e.mustStatus(e.do("GET", "/admin/v1/accounts", "", nil, nil), 401)
	e.mustStatus(e.do("GET", "/admin/v1/accounts", "ses_0123", nil, nil), 401)
	e.mustStatus(e.do("DELETE", "/admin/v1/sessions/current", viewer, nil, nil), 204)
	e.mustStatus(e.do("GET", "/admin/v1/accounts", viewer, nil, nil), 401)
	e.mustStatus(e.admin("PATCH", "/admin/v1/operators/otto", map[string]bool{"disabled": true}), 200)
	e.mustStatus(e.do("GET", "/admin/v1/accounts", op, nil, nil), 401)
	e.mustStatus(e.do("POST", "/admin/v1/sessions", "", adminapi.LoginRequest{Name: "otto", Password: "password-of-otto"}, nil), 401)
}

func TestOperatorLogin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustStatus(e.admin("POST", "/admin/v1/operators", adminapi.CreateOperatorRequest{Name: "lisa", Role: "viewer", Password: "short"}), 400)
	e.mustStatus(e.admin("POST", "/admin/v1/operators", adminapi.CreateOperatorRequest{Name: "Bad Name", Role: "viewer", Password: "long enough password"}), 400)
	e.mustStatus(e.admin("POST", "/admin/v1/operators", adminapi.CreateOperatorRequest{Name: "lisa", Role: "root", Password: "long enough password"}), 400)
	e.mustStatus(e.admin("POST", "/admin/v1/operators", adminapi.CreateOperatorRequest{Name: "lisa", Role: "viewer", Password: "long enough password"}), 201)
	e.mustStatus(e.admin("POST", "/admin/v1/operators", adminapi.CreateOperatorRequest{Name: "lisa", Role: "viewer", Password: "long enough password"}), 409)
	// The password hash is stored as Argon2id, never the password.
	o, err := e.store.GetOperator(context.Background(), "lisa")
	if err != nil || !strings.HasPrefix(o.PasswordHash, "$argon2id$") || strings.Contains(o.PasswordHash, "long enough") {
		t.Fatalf("stored operator %+v, %v", o, err)
	}
	e.mustStatus(e.do("POST", "/admin/v1/sessions", "", adminapi.LoginRequest{Name: "lisa", Password: "wrong password!"}, nil), 401)
	e.mustStatus(e.do("POST", "/admin/v1/sessions", "", adminapi.LoginRequest{Name: "nobody", Password: "long enough password"}, nil), 401)
	// Login is rate limited per client address and per name: the burst runs out.
	limited := false
	for i := 0; i < 15 && !limited; i++ {
		limited = e.do("POST", "/admin/v1/sessions", "", adminapi.LoginRequest{Name: "lisa", Password: "wrong password!"}, nil).status == 429
	}
	if !limited {
		t.Fatal("15 failed logins in a row were never rate limited")
	}
	// The operator's password never reaches the audit log.
	var page adminapi.AuditPage
	e.mustStatus(e.admin("GET", "/admin/v1/audit?target=lisa", nil), 200).json(t, &page)
	if len(page.Data) == 0 {
		t.Fatal("operator creation not audited")
	}
	for _, a := range page.Data {
		if strings.Contains(string(a.Request), "long enough") {
			t.Fatalf("password in the audit log: %s", a.Request)
		}
	}
}

func TestAuditLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	op := e.login("otto", "operator")
	acct := e.createAccount("Audit AB", "se")
	e.mustStatus(e.do("PATCH", "/admin/v1/accounts/"+acct, op, map[string]bool{"suspended": true}, nil), 200)
	var key adminapi.Key
	e.mustStatus(e.do("POST", "/admin/v1/accounts/"+acct+"/keys", op, map[string]string{"name": "ci"}, nil), 201).json(t, &key)

	var page adminapi.AuditPage
	e.mustStatus(e.admin("GET", "/admin/v1/audit?target="+acct, nil), 200).json(t, &page)
	if len(page.Data) != 3 {
		t.Fatalf("audit entries of %s: %d, want 3 (create, suspend, key)", acct, len(page.Data))
	}
	// Newest first: the key, the suspension (with before and after), the creation.
	k, sus, cr := page.Data[0], page.Data[1], page.Data[2]
	if cr.Actor != "token" || cr.Role != "admin" || cr.Action != "POST /admin/v1/accounts" || cr.Status != 201 || string(cr.Before) != "null" {
		t.Errorf("creation entry %+v", cr)
	}
	var before, after adminapi.Account
	_ = json.Unmarshal(sus.Before, &before)
	_ = json.Unmarshal(sus.After, &after)
	if sus.Actor != "operator:otto" || sus.Action != "PATCH /admin/v1/accounts/{id}" || before.Suspended || !after.Suspended {
		t.Errorf("suspension entry %+v", sus)
	}
	if strings.Contains(string(k.After), key.Secret) || !strings.Contains(string(k.After), "[redacted]") {
		t.Errorf("key secret in the audit log: %s", k.After)
	}
	// Reads are not audited.
	e.mustStatus(e.admin("GET", "/admin/v1/accounts/"+acct, nil), 200)
	var again adminapi.AuditPage
	e.mustStatus(e.admin("GET", "/admin/v1/audit?target="+acct+"&limit=1", nil), 200).json(t, &again)
	if len(again.Data) != 1 || again.Data[0].ID != k.ID || again.NextBefore == nil {
		t.Fatalf("page of one: %+v", again)
	}
	var rest adminapi.AuditPage
	e.mustStatus(e.admin("GET", "/admin/v1/audit?target="+acct+"&before="+itoa(*again.NextBefore), nil), 200).json(t, &rest)
	if len(rest.Data) != 2 || rest.Data[0].ID != sus.ID {
		t.Fatalf("second page: %+v", rest)
	}
	e.mustStatus(e.admin("GET", "/admin/v1/audit?limit=0", nil), 400)
	e.mustStatus(e.admin("GET", "/admin/v1/audit?before=x", nil), 400)
}

func itoa(n int64) string { return strconvFormat(n) }

// TestAuditAppendOnly runs every forbidden statement on the audit log as the runtime role.
func TestAuditAppendOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, db := storetest.Open(t, store.Config{Logger: quiet()})
	if _, err := st.AppendAudit(ctx, store.AuditEntry{Actor: "token", Role: "admin", Action: "POST /x", Status: 200}); err != nil {
		t.Fatal(err)
	}
	rt, err := pgx.Connect(ctx, db.RuntimeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	for _, stmt := range []string{
		`UPDATE audit_log SET actor = 'someone else'`,
		`DELETE FROM audit_log`,
		`TRUNCATE audit_log`,
		`DROP TRIGGER audit_no_update ON audit_log`,
		`ALTER TABLE audit_log DISABLE TRIGGER ALL`,
		`DROP TABLE audit_log`,
	} {
		_, err := rt.Exec(ctx, stmt)
		var pg *pgconn.PgError
		if !errors.As(err, &pg) || pg.Code != "42501" {
			t.Errorf("%s: %v, want insufficient_privilege", stmt, err)
		}
	}
	// Even the owner's UPDATE and DELETE hit the trigger.
	own, err := pgx.Connect(ctx, db.OwnerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close(ctx)
	if _, err := own.Exec(ctx, `DELETE FROM audit_log`); err == nil {
		t.Error("the owner deleted audit entries")
	}
}

func TestAccountViews(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200)
	acct := e.createAccount("Views AB", "se")
	var key adminapi.Key
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+acct+"/keys", map[string]string{"name": "a"}), 201).json(t, &key)
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+acct+"/credits", map[string]string{"amount_sek": "100.00", "note": "start"}), 200)

	// Adjustments: a reason is required, either sign.
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+acct+"/adjustments", map[string]string{"amount_sek": "-2.50"}), 400)
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+acct+"/adjustments", map[string]string{"amount_sek": "0", "reason": "x"}), 400)
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+acct+"/adjustments", map[string]any{"amount_sek": 2.5, "reason": "x"}), 400)
	var c adminapi.Credit
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+acct+"/adjustments", map[string]string{"amount_sek": "-2.50", "reason": "goodwill reversal"}), 200).json(t, &c)
	if c.BalanceSEK != "97.500000" && c.BalanceSEK != "97.50" {
		t.Fatalf("balance after adjustment %s", c.BalanceSEK)
	}

	// Usage: two records today on the key, one by the test box (no key).
	now := time.Now().UTC()
	kid := key.ID
	recs := []usage.Record{
		{RequestID: "req_views_1", TS: now.Add(-2 * time.Minute), AccountID: acct, KeyID: &kid, Model: "llama-3.1-8b", Endpoint: "/v1/chat/completions",
			Status: 200, Result: "ok", PromptTokens: 1000, CompletionTokens: 1000, PriceMicroSEK: 4500},
		{RequestID: "req_views_2", TS: now.Add(-time.Minute), AccountID: acct, KeyID: nil, Model: "llama-3.1-8b", Endpoint: "/v1/chat/completions",
			Status: 200, Result: "ok", PromptTokens: 1000, CompletionTokens: 1000, PriceMicroSEK: 4500,
			Routing: &usage.Routing{Policy: "se", OutputUnderreported: true, ReportedOutput: 1}},
	}
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+acct+"/models", map[string]any{"models": []string{"llama-3.1-8b"}}), 200)
	if rep, err := e.store.IngestBatch(context.Background(), usage.Batch{NodeID: "node-1", BatchID: "b1", Records: recs}); err != nil || rep.Inserted != 2 {
		t.Fatalf("ingest %+v %v", rep, err)
	}
	var u adminapi.UsageReport
	e.mustStatus(e.admin("GET", "/admin/v1/accounts/"+acct+"/usage", nil), 200).json(t, &u)
	// The two records fall on one day, or on two just after midnight UTC.
	days := map[string]int64{recs[0].TS.Format(time.DateOnly): 0, recs[1].TS.Format(time.DateOnly): 0}
	var requests int64
	for _, d := range u.Data {
		if _, ok := days[d.Day]; !ok {
			t.Fatalf("usage on %s, want only %v: %+v", d.Day, days, u)
		}
		requests += d.Requests
	}
	if u.Days != 30 || len(u.Data) != len(days) || requests != 2 || u.PriceMicroSEK != 9000 {
		t.Fatalf("usage %+v", u)
	}
	e.mustStatus(e.admin("GET", "/admin/v1/accounts/"+acct+"/usage?days=0", nil), 400)
	e.mustStatus(e.admin("GET", "/admin/v1/accounts/acct_0000000000000000/usage", nil), 404)

	// Ledger, newest first, in pages (ingest debits a batch's records as one entry).
	var lp adminapi.LedgerPage
	e.mustStatus(e.admin("GET", "/admin/v1/accounts/"+acct+"/ledger?limit=2", nil), 200).json(t, &lp)
	if len(lp.Data) != 2 || lp.NextBefore == nil || lp.Data[0].Kind != "debit" || lp.Data[0].AmountMicroSEK != -9000 {
		t.Fatalf("ledger page %+v", lp)
	}
	var all adminapi.LedgerPage
	e.mustStatus(e.admin("GET", "/admin/v1/accounts/"+acct+"/ledger", nil), 200).json(t, &all)
	kinds := []string{}
	for _, le := range all.Data {
		kinds = append(kinds, le.Kind)
	}
	if strings.Join(kinds, ",") != "debit,adjustment,credit" || all.Data[1].Note != "goodwill reversal" || all.Data[1].AmountMicroSEK != -2_500_000 {
		t.Fatalf("ledger %v %+v", kinds, all.Data)
	}
	var rest adminapi.LedgerPage
	e.mustStatus(e.admin("GET", "/admin/v1/accounts/"+acct+"/ledger?before="+itoa(*lp.NextBefore), nil), 200).json(t, &rest)
	if len(rest.Data) != 1 || rest.Data[0].Kind != "credit" {
		t.Fatalf("second ledger page %+v", rest)
	}

	// Records of any account, with filters.
	var rp adminapi.RecordPage
	e.mustStatus(e.admin("GET", "/admin/v1/records?key_id=none", nil), 200).json(t, &rp)
	if len(rp.Data) != 1 || rp.Data[0].RequestID != "req_views_2" || rp.Data[0].KeyID != nil {
		t.Fatalf("test-box records %+v", rp)
	}
	e.mustStatus(e.admin("GET", "/admin/v1/records?account_id="+acct+"&key_id="+kid, nil), 200).json(t, &rp)
	if len(rp.Data) != 1 || rp.Data[0].RequestID != "req_views_1" {
		t.Fatalf("key records %+v", rp)
	}
	e.mustStatus(e.admin("GET", "/admin/v1/records?model=nomic-embed", nil), 200).json(t, &rp)
	if len(rp.Data) != 0 {
		t.Fatalf("model filter %+v", rp)
	}
	e.mustStatus(e.admin("GET", "/admin/v1/records?from="+now.Add(-90*time.Second).Format(time.RFC3339Nano)+"&limit=1", nil), 200).json(t, &rp)
	if len(rp.Data) != 1 || rp.Data[0].RequestID != "req_views_2" || rp.NextCursor == "" {
		t.Fatalf("time filter %+v", rp)
	}
	e.mustStatus(e.admin("GET", "/admin/v1/records?after="+rp.NextCursor, nil), 200).json(t, &rp)
	if len(rp.Data) != 1 || rp.Data[0].RequestID != "req_views_1" {
		t.Fatalf("next page %+v", rp)
	}
	e.mustStatus(e.admin("GET", "/admin/v1/records?output_underreported=true", nil), 200).json(t, &rp)
	if len(rp.Data) != 1 || rp.Data[0].RequestID != "req_views_2" || !rp.Data[0].Routing.OutputUnderreported || rp.Data[0].Routing.ReportedOutput != 1 {
		t.Fatalf("underreported filter %+v", rp)
	}
	for _, bad := range []string{"key_id=key_x", "from=yesterday", "after=!!!", "limit=1001", "output_underreported=yes"} {
		e.mustStatus(e.admin("GET", "/admin/v1/records?"+bad, nil), 400)
	}
	e.mustStatus(e.admin("GET", "/admin/v1/records/req_views_2", nil), 200)
	e.mustStatus(e.admin("GET", "/admin/v1/records/req_nope", nil), 404)

	// Key last use.
	var keys adminapi.List[adminapi.Key]
	e.mustStatus(e.admin("GET", "/admin/v1/accounts/"+acct+"/keys", nil), 200).json(t, &keys)
	if len(keys.Data) != 1 || keys.Data[0].LastUsedAt == nil || !keys.Data[0].LastUsedAt.Equal(recs[0].TS.Truncate(time.Microsecond)) {
		t.Fatalf("key last use %+v", keys.Data)
	}
}

func strconvFormat(n int64) string { return strconv.FormatInt(n, 10) }

func TestAccountSearch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := map[string]string{}
	for _, c := range []string{"Alpha AB", "alphabet Oy", "Beta_Corp", "Gamma 100%"} {
		ids[c] = e.createAccount(c, "se")
	}
	search := func(query string) (names []string, next string) {
		t.Helper()
		var p adminapi.AccountPage
		e.mustStatus(e.admin("GET", "/admin/v1/accounts?"+query, nil), 200).json(t, &p)
		for _, a := range p.Data {
			names = append(names, a.Customer)
		}
		sort.Strings(names)
		return names, p.NextAfter
	}
	tests := []struct {
		query string
		want  string
	}{
		{"q=alpha", "Alpha AB,alphabet Oy"},
		{"q=ALPHABET", "alphabet Oy"},
		{"q=_", "Beta_Corp"},    // LIKE wildcards match themselves
		{"q=%25", "Gamma 100%"}, // %
		{"q=" + ids["Beta_Corp"], "Beta_Corp"},
		{"q=nobody", ""},
	}
	for _, tt := range tests {
		if got, _ := search(tt.query); strings.Join(got, ",") != tt.want {
			t.Errorf("%s: %v, want %s", tt.query, got, tt.want)
		}
	}
	// Pages by ID.
	seen := map[string]bool{}
	after := ""
	for i := 0; i < 5; i++ {
		var p adminapi.AccountPage
		e.mustStatus(e.admin("GET", "/admin/v1/accounts?limit=3&after="+after, nil), 200).json(t, &p)
		for _, a := range p.Data {
			if seen[a.ID] {
				t.Fatalf("%s twice", a.ID)
			}
			seen[a.ID] = true
		}
		if p.NextAfter == "" {
			break
		}
		after = p.NextAfter
	}
	if len(seen) != 4 {
		t.Fatalf("pages held %d accounts, want 4", len(seen))
	}
	e.mustStatus(e.admin("GET", "/admin/v1/accounts?limit=0", nil), 400)
}
