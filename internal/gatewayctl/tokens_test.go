package gatewayctl

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cliEnv runs gatewayctl in process with the given environment.
func cliEnv(t *testing.T, env map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{out: &out, errOut: &errOut, getenv: func(k string) string { return env[k] }}
	root := a.root()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(stdin))
	code := 0
	if err := root.ExecuteContext(context.Background()); err != nil {
		errOut.WriteString(explain(err, a.adminURL))
		code = 1
	}
	return code, out.String(), errOut.String()
}

// An operator works with its own token: made (here by the shared admin token for a named
// operator, saved to a file), used from the file, shown by whoami, named in the audit log,
// listed and revoked, after which it is refused.
func TestTokensAgainstControlPlane(t *testing.T) {
	const tok = "adm_cli_test_0123456789abcdef0123456789"
	srv := controlPlane(t, tok)
	home := t.TempDir()
	admin := map[string]string{"GATEWAY_ADMIN_URL": srv.URL, "GATEWAY_ADMIN_TOKEN": tok, "HOME": home}
	if code, _, errOut := cliEnv(t, admin, "a long operator password\n", "operators", "create", "otto", "--role", "operator"); code != 0 {
		t.Fatalf("operators create: %s", errOut)
	}
	code, out, errOut := cliEnv(t, admin, "", "tokens", "create", "laptop", "--operator", "otto", "--expires-in", "30d", "--save")
	file := filepath.Join(home, ".config", "gatewayctl", "token")
	if code != 0 || !strings.Contains(out, "Saved to "+file) || strings.Contains(out, "gwo_") {
		t.Fatalf("tokens create --save: %d %s %s", code, out, errOut)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	// From here on the operator's own token, found in the default file.
	me := map[string]string{"GATEWAY_ADMIN_URL": srv.URL, "HOME": home}
	code, out, errOut = cliEnv(t, me, "", "whoami")
	if code != 0 || !strings.Contains(out, "otto") || !strings.Contains(out, "operator_token") || !strings.Contains(out, "laptop") {
		t.Fatalf("whoami: %d %s %s", code, out, errOut)
	}
	var acct struct{ ID string }
	if code, out, errOut := cliEnv(t, me, "", "--json", "accounts", "create", "--customer", "Token AB", "--residency", "se"); code != 0 || json.Unmarshal([]byte(out), &acct) != nil {
		t.Fatalf("accounts create with the token: %d %s %s", code, out, errOut)
	}
	code, out, _ = cliEnv(t, me, "", "audit", "--target", acct.ID)
	if code != 0 || !strings.Contains(out, "operator:otto") || !strings.Contains(out, "token laptop") {
		t.Fatalf("audit names the operator and token: %d\n%s", code, out)
	}
	// An operator cannot make an admin's token, nor see others' tokens.
	if code, _, errOut := cliEnv(t, me, "", "tokens", "create", "root", "--role", "admin"); code == 0 || !strings.Contains(errOut, "cannot exceed") || !strings.Contains(errOut, "whoami") {
		t.Fatalf("token beyond the role: %d %s", code, errOut)
	}
	code, out, _ = cliEnv(t, me, "", "tokens", "create", "second", "--role", "viewer")
	if code != 0 || !strings.Contains(out, "Secret (shown once") || !strings.Contains(out, "gwo_") {
		t.Fatalf("tokens create: %d %s", code, out)
	}
	var list struct {
		Data []struct{ ID, Name, State string }
	}
	if code, out, _ := cliEnv(t, me, "", "--json", "tokens", "list"); code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Data) != 2 {
		t.Fatalf("tokens list: %d %s", code, out)
	}
	laptop := list.Data[1].ID
	if list.Data[1].Name != "laptop" {
		t.Fatalf("tokens list order: %+v", list.Data)
	}
	if code, out, errOut := cliEnv(t, me, "", "tokens", "revoke", laptop); code != 0 || !strings.Contains(out, "Revoked "+laptop) {
		t.Fatalf("tokens revoke: %d %s %s", code, out, errOut)
	}
	code, _, errOut = cliEnv(t, me, "", "whoami")
	if code == 0 || !strings.Contains(errOut, "revoked") || !strings.Contains(errOut, "check --token") {
		t.Fatalf("whoami with a revoked token: %d %s", code, errOut)
	}
	// An operator for OIDC sign-in needs no password; its email shows in the list.
	if code, _, errOut := cliEnv(t, admin, "", "operators", "create", "sso", "--email", "SSO@example.com"); code != 0 {
		t.Fatalf("operators create --email: %s", errOut)
	}
	if code, out, _ := cliEnv(t, admin, "", "operators", "list"); code != 0 || !strings.Contains(out, "sso@example.com") {
		t.Fatalf("operators list: %d %s", code, out)
	}
	if code, _, errOut := cliEnv(t, admin, "", "operators", "set", "otto", "--email", "otto@example.com"); code != 0 {
		t.Fatalf("operators set --email: %s", errOut)
	}
	// The admin token still works, named as the break-glass credential.
	if code, out, _ := cliEnv(t, admin, "", "whoami"); code != 0 || !strings.Contains(out, "admin_token") {
		t.Fatalf("whoami with the admin token: %d %s", code, out)
	}
	// A dry run of a catalogue load is not audited as a change; the load is.
	cat := filepath.Join("..", "..", "configs", "catalog.example.yaml")
	for _, args := range [][]string{{"catalog", "load", "--dry-run", cat}, {"catalog", "load", cat}} {
		if code, _, errOut := cliEnv(t, admin, "", args...); code != 0 {
			t.Fatalf("%v: %s", args, errOut)
		}
	}
	code, out, _ = cliEnv(t, admin, "", "audit")
	if code != 0 || strings.Count(out, "PUT /admin/v1/catalog") != 1 {
		t.Fatalf("catalogue loads in the audit log, want the one real load:\n%s", out)
	}
}

func TestCredentialSources(t *testing.T) {
	f, srv := newFakeAdmin(t)
	f.on("GET", "/admin/v1/whoami", 200, `{"actor":"operator:ada","operator":"ada","role":"admin","credential":"operator_token"}`)
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	loose := filepath.Join(dir, "loose")
	if err := os.WriteFile(good, []byte("gwo_from_file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(loose, []byte("gwo_loose\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		wantAuth string
		wantErr  string
	}{
		{"--token wins over env", map[string]string{"GATEWAY_TOKEN": "gwo_env"}, []string{"--token", "gwo_flag"}, "Bearer gwo_flag", ""},
		{"--admin-token", map[string]string{"GATEWAY_TOKEN": "gwo_env"}, []string{"--admin-token", "adm"}, "Bearer adm", ""},
		{"both flags", nil, []string{"--token", "a", "--admin-token", "b"}, "", "not both"},
		{"GATEWAY_TOKEN before GATEWAY_ADMIN_TOKEN", map[string]string{"GATEWAY_TOKEN": "gwo_env", "GATEWAY_ADMIN_TOKEN": "adm"}, nil, "Bearer gwo_env", ""},
		{"GATEWAY_ADMIN_TOKEN alone", map[string]string{"GATEWAY_ADMIN_TOKEN": "adm"}, nil, "Bearer adm", ""},
		{"--token-file", nil, []string{"--token-file", good}, "Bearer gwo_from_file", ""},
		{"GATEWAY_TOKEN_FILE", map[string]string{"GATEWAY_TOKEN_FILE": good}, nil, "Bearer gwo_from_file", ""},
		{"default file under XDG_CONFIG_HOME", map[string]string{"XDG_CONFIG_HOME": dir + "/xdg"}, nil, "Bearer gwo_xdg", ""},
		{"file readable by others", nil, []string{"--token-file", loose}, "", "chmod 600"},
		{"missing file", nil, []string{"--token-file", filepath.Join(dir, "none")}, "", "no such file"},
	}
	if err := os.MkdirAll(filepath.Join(dir, "xdg", "gatewayctl"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "xdg", "gatewayctl", "token"), []byte("gwo_xdg"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"GATEWAY_ADMIN_URL": srv.URL}
			for k, v := range tt.env {
				env[k] = v
			}
			n := len(f.got)
			code, out, errOut := cliEnv(t, env, "", append(tt.args, "whoami")...)
			if tt.wantErr != "" {
				if code == 0 || !strings.Contains(errOut, tt.wantErr) || len(f.got) != n {
					t.Fatalf("exit %d, stderr %q, %d requests; want error %q and none", code, errOut, len(f.got)-n, tt.wantErr)
				}
				return
			}
			if code != 0 || f.got[n].auth != tt.wantAuth || !strings.Contains(out, "ada") {
				t.Fatalf("exit %d auth %q out %q err %q", code, f.got[n].auth, out, errOut)
			}
		})
	}
}

func TestParseExpiry(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90d", 90 * 24 * time.Hour, true},
		{"12h", 12 * time.Hour, true},
		{"0d", 0, false},
		{"-1h", 0, false},
		{"10 minutes", 0, false},
		{"d", 0, false},
	}
	for _, tt := range tests {
		got, err := parseExpiry(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseExpiry(%q) = %v, %v", tt.in, got, err)
		}
	}
}
