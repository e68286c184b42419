package gatewayctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// credential returns the bearer token to send, the first of: --token, --admin-token,
// --token-file, GATEWAY_TOKEN, GATEWAY_ADMIN_TOKEN, GATEWAY_TOKEN_FILE and the default
// token file (tokenFileDefault), when it exists. Tokens are read here, never as flag
// defaults, so --help cannot show them. No credential at all is not an error: the API
// answers 401 with its own message.
func (a *app) credential() (string, error) {
	switch {
	case a.token != "" && a.adminToken != "":
		return "", errors.New("give --token or --admin-token, not both")
	case a.token != "":
		return a.token, nil
	case a.adminToken != "":
		return a.adminToken, nil
	case a.tokenFile != "":
		return readTokenFile(a.tokenFile)
	}
	for _, k := range []string{"GATEWAY_TOKEN", "GATEWAY_ADMIN_TOKEN"} {
		if v := strings.TrimSpace(a.getenv(k)); v != "" {
			return v, nil
		}
	}
	if f := a.getenv("GATEWAY_TOKEN_FILE"); f != "" {
		return readTokenFile(f)
	}
	if f := a.tokenFileDefault(); f != "" {
		if _, err := os.Stat(f); err == nil {
			return readTokenFile(f)
		}
	}
	return "", nil
}

// tokenFileDefault is $XDG_CONFIG_HOME/gatewayctl/token, or ~/.config/gatewayctl/token
// ("" when neither variable is set).
func (a *app) tokenFileDefault() string {
	dir := a.getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := a.getenv("HOME")
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "gatewayctl", "token")
}

// readTokenFile reads a token from the first line of a file that only its owner may
// read, as ssh treats private keys: a token others can read is not one person's any more.
func readTokenFile(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("token file %s is readable by others (mode %04o): chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	if tok := strings.TrimSpace(line); tok != "" {
		return tok, nil
	}
	return "", fmt.Errorf("token file %s is empty", path)
}
