package gatewayctl

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// gatewayctl alerts against the real control plane: a rule is created with its threshold
// in the kind's unit and its secret printed once, listed, turned off, and deleted; bad
// thresholds are refused before anything is sent.
func TestAlertsAgainstControlPlane(t *testing.T) {
	const tok = "adm_cli_alerts_0123456789abcdef0123456789"
	srv := controlPlane(t, tok)
	runAt := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		env := map[string]string{"GATEWAY_ADMIN_URL": srv.URL, "GATEWAY_ADMIN_TOKEN": tok}
		code := run(context.Background(), args, &out, &errOut, func(k string) string { return env[k] })
		return code, out.String(), errOut.String()
	}
	code, out, errOut := runAt("alerts", "create", "--name", "quiet nodes", "--kind", "node_silent", "--threshold", "2m",
		"--webhook-url", "https://hooks.example.com/a")
	if code != 0 || !strings.Contains(out, "2m0s") || !strings.Contains(out, "Webhook signing secret (shown once): whsec_") {
		t.Fatalf("create: %d %s %s", code, out, errOut)
	}
	id := regexp.MustCompile(`alr_[0-9a-f]{16}`).FindString(out)
	steps := []struct {
		args      []string
		code      int
		want, err string
	}{
		{[]string{"alerts", "create", "--name", "low", "--kind", "balance_below", "--threshold", "12.50", "--webhook-url", "https://h.example"}, 0, "12.50 SEK", ""},
		{[]string{"alerts", "list"}, 0, "quiet nodes", ""},
		{[]string{"alerts", "disable", id}, 0, "off", ""},
		{[]string{"alerts", "deliveries", "--rule", id}, 0, "NEXT ATTEMPT", ""},
		{[]string{"alerts", "create", "--name", "x", "--kind", "budget_used_above", "--threshold", "lots", "--webhook-url", "https://h.example"}, 1, "", "takes a percentage"},
		{[]string{"alerts", "create", "--name", "x", "--kind", "node_silent", "--threshold", "10 minutes", "--webhook-url", "https://h.example"}, 1, "", "such as 5m"},
		{[]string{"alerts", "create", "--name", "x", "--kind", "disk_full", "--webhook-url", "https://h.example"}, 1, "", "--kind \"disk_full\""},
		{[]string{"alerts", "create", "--name", "x", "--kind", "route_problem", "--webhook-url", "mailto:ops@example.com"}, 1, "", "webhook_url"},
		{[]string{"alerts", "delete", id}, 0, "Deleted alert rule " + id, ""},
		{[]string{"alerts", "delete", id}, 1, "", "not found"},
	}
	for _, s := range steps {
		code, out, errOut := runAt(s.args...)
		if code != s.code || !strings.Contains(out, s.want) || !strings.Contains(errOut, s.err) {
			t.Errorf("%v: exit %d, out %q, err %q; want exit %d, out with %q, err with %q", s.args, code, out, errOut, s.code, s.want, s.err)
		}
	}
}
