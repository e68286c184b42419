package gatewayctl

import (
	"strings"
	"testing"
)

// --clear says what it leaves in force for what the command changes: a key or an account.
func TestSetLimitsClearHelp(t *testing.T) {
	for _, tt := range []struct {
		args        []string
		want, never string
	}{
		{[]string{"keys", "set-limits", "--help"}, "remove the key's own limits (it is limited through its account only)", "account's own"},
		{[]string{"accounts", "set-limits", "--help"}, "remove the account's own limits (the deployment defaults apply)", "key's own"},
	} {
		t.Run(tt.args[0], func(t *testing.T) {
			_, srv := newFakeAdmin(t)
			code, out, errOut := runCLI(t, srv, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !strings.Contains(spaced(out), tt.want) || strings.Contains(out, tt.never) {
				t.Fatalf("help of --clear: want %q, not %q:\n%s", tt.want, tt.never, out)
			}
		})
	}
}
