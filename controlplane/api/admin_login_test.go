package api_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/api"
)

// TestLoginLimiterHoldsUnderFlood: the login limiter cannot be reset. Once an address has
// spent its attempts, attempts on 10,001 other names are refused without adding entries,
// and the spent name and address stay refused (before: past 10,000 entries the whole table
// was cleared, and every bucket started full again). Failed logins and bad admin tokens are
// in the audit log, a few rows per address however many failures.
func TestLoginLimiterHoldsUnderFlood(t *testing.T) {
	t.Parallel()
	// The API's clock stands still, so no bucket refills however long the flood takes.
	frozen := time.Now()
	e := newEnvWith(t, func(c *api.Config) { c.Now = func() time.Time { return frozen } })
	e.mustStatus(e.do("GET", "/admin/v1/accounts", "not-the-admin-token-0123456789abcdef", nil, nil), 401)
	login := func(name string) int {
		return e.do("POST", "/admin/v1/sessions", "", adminapi.LoginRequest{Name: name, Password: "wrong password!"}, nil).status
	}
	for i := range 10 {
		if st := login("root"); st != 401 {
			t.Fatalf("attempt %d: %d, want 401", i, st)
		}
	}
	if st := login("root"); st != 429 {
		t.Fatalf("11th attempt: %d, want 429", st)
	}
	for i := range 10001 {
		if st := login(fmt.Sprintf("n%d", i)); st != 429 {
			t.Fatalf("attempt on name %d from the spent address: %d, want 429", i, st)
		}
	}
	if st := login("root"); st != 429 {
		t.Fatalf("after the flood: %d, want 429", st)
	}

	var page adminapi.AuditPage
	e.mustStatus(e.admin("GET", "/admin/v1/audit?actor=anonymous&limit=1000", nil), 200).json(t, &page)
	var logins, tokens int
	for _, a := range page.Data {
		switch a.Action {
		case "POST /admin/v1/sessions":
			logins++
		case "GET /admin/v1/accounts":
			tokens++
			if a.Status != 401 {
				t.Errorf("bad token entry %+v", a)
			}
		}
	}
	if tokens != 1 || logins < 1 || logins+tokens > 10 {
		t.Fatalf("audit rows: %d bad tokens, %d failed logins (of 10,013 failures); want 1 and a few", tokens, logins)
	}
}
