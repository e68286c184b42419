package gatewayctl

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sekgate/gateway/controlplane/api/apitest"
	"github.com/sekgate/gateway/controlplane/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// controlPlane serves the real admin API on real Postgres.
func controlPlane(t *testing.T, adminToken string) *httptest.Server {
	t.Helper()
	h, _ := apitest.New(t, adminToken)
	srv := httptest.NewServer(h.Admin)
	t.Cleanup(srv.Close)
	return srv
}

// gatewayctl operators and audit against the control plane: an operator is created with a
// password from standard input, its change shows in the audit log, and the static token
// is named as the actor.
func TestAuditAndOperatorsAgainstControlPlane(t *testing.T) {
	const tok = "adm_cli_test_0123456789abcdef0123456789"
	srv := controlPlane(t, tok)
	runIn := func(stdin string, args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		env := map[string]string{"GATEWAY_ADMIN_URL": srv.URL, "GATEWAY_ADMIN_TOKEN": tok}
		a := &app{out: &out, errOut: &errOut, getenv: func(k string) string { return env[k] }}
		root := a.root()
		root.SetArgs(args)
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetIn(strings.NewReader(stdin))
		code := 0
		if err := root.ExecuteContext(context.Background()); err != nil {
			errOut.WriteString(err.Error())
			code = 1
		}
		return code, out.String(), errOut.String()
	}
	if code, out, errOut := runIn("a long operator password\n", "operators", "create", "vera", "--role", "viewer"); code != 0 || !strings.Contains(out, "vera") {
		t.Fatalf("operators create: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := runIn("", "operators", "create", "nopw", "--role", "viewer"); code == 0 || !strings.Contains(errOut, "no password") {
		t.Fatalf("operators create without a password: %d %s", code, errOut)
	}
	if code, out, _ := runIn("", "operators", "set", "vera", "--role", "operator"); code != 0 || !strings.Contains(out, "operator") {
		t.Fatalf("operators set: %d %s", code, out)
	}
	// A manual adjustment needs a reason; it shows in the balance and the audit log.
	var acct struct{ ID string }
	if code, out, _ := runIn("", "--json", "accounts", "create", "--customer", "Adjust AB", "--residency", "se"); code != 0 || json.Unmarshal([]byte(out), &acct) != nil {
		t.Fatalf("accounts create: %d %s", code, out)
	}
	if code, _, errOut := runIn("", "adjust", acct.ID, "--amount-sek", "-2.50"); code == 0 || !strings.Contains(errOut, "--reason") {
		t.Fatalf("adjust without a reason: %d %s", code, errOut)
	}
	if code, out, errOut := runIn("", "adjust", acct.ID, "--amount-sek", "-2.50", "--reason", "wrong credit"); code != 0 || !strings.Contains(out, "Balance: -2.50 SEK") {
		t.Fatalf("adjust: %d %s %s", code, out, errOut)
	}
	if code, out, _ := runIn("", "audit", "--target", acct.ID); code != 0 || !strings.Contains(out, "POST /admin/v1/accounts/{id}/adjustments") {
		t.Fatalf("audit of the adjustment: %d %s", code, out)
	}
	code, out, errOut := runIn("", "audit", "--target", "vera")
	if code != 0 {
		t.Fatalf("audit: %d %s", code, errOut)
	}
	for _, want := range []string{"PATCH /admin/v1/operators/{name}", "POST /admin/v1/operators", "token", "vera", "201", "200"} {
		if !strings.Contains(out, want) {
			t.Errorf("audit output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "a long operator password") {
		t.Fatal("password in audit output")
	}
	code, out, _ = runIn("", "--json", "audit", "--limit", "1")
	if code != 0 || !strings.Contains(out, `"next_before"`) || !strings.Contains(out, `"actor": "token"`) && !strings.Contains(out, `"actor":"token"`) {
		t.Fatalf("audit --json: %d %s", code, out)
	}
}
