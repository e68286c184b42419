package gatewayctl

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// gatewayctl sets, shows and clears budgets against the real control plane; bad flags are
// refused before anything is sent.
func TestBudgetsAgainstControlPlane(t *testing.T) {
	const tok = "adm_cli_budget_0123456789abcdef012345678"
	srv := controlPlane(t, tok)
	runAt := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		env := map[string]string{"GATEWAY_ADMIN_URL": srv.URL, "GATEWAY_ADMIN_TOKEN": tok}
		code := run(context.Background(), args, &out, &errOut, func(k string) string { return env[k] })
		return code, out.String(), errOut.String()
	}
	code, out, errOut := runAt("--json", "accounts", "create", "--customer", "Budget CLI AB", "--residency", "se")
	if code != 0 {
		t.Fatalf("create account: %d %s", code, errOut)
	}
	var acct adminapi.Account
	if err := json.Unmarshal([]byte(out), &acct); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runAt("--json", "keys", "create", acct.ID, "--name", "batch")
	if code != 0 {
		t.Fatalf("create key: %d %s", code, errOut)
	}
	var key adminapi.Key
	if err := json.Unmarshal([]byte(out), &key); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		args      []string
		code      int
		want, err string
	}{
		{[]string{"accounts", "set-budget", acct.ID, "--limit", "500"}, 0, "500.00", ""},
		{[]string{"keys", "set-budget", key.ID, "--limit", "12.5", "--period", "day"}, 0, "12.50", ""},
		{[]string{"accounts", "budgets", acct.ID}, 0, "key " + key.ID + " (batch)", ""},
		{[]string{"keys", "set-budget", key.ID, "--limit", "1", "--period", "year"}, 1, "", "--period \"year\""},
		{[]string{"keys", "set-budget", key.ID, "--limit", "-1"}, 1, "", "--limit \"-1\""},
		{[]string{"keys", "set-budget", key.ID}, 1, "", "--limit SEK or --clear"},
		{[]string{"accounts", "set-budget", "acct_0000000000000000", "--limit", "1"}, 1, "", "not found"},
		{[]string{"keys", "set-budget", key.ID, "--clear"}, 0, "No budget on " + key.ID, ""},
	}
	for _, s := range steps {
		code, out, errOut := runAt(s.args...)
		if code != s.code || !strings.Contains(out, s.want) || !strings.Contains(errOut, s.err) {
			t.Errorf("%v: exit %d, out %q, err %q; want exit %d, out with %q, err with %q", s.args, code, out, errOut, s.code, s.want, s.err)
		}
	}
	_, out, _ = runAt("accounts", "budgets", acct.ID)
	if strings.Contains(out, key.ID) || !strings.Contains(out, "month") {
		t.Errorf("budgets after clearing the key's:\n%s", out)
	}
}
