package plane

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/sekgate/gateway/controlplane/api"
	"github.com/sekgate/gateway/internal/flagenv"
	"github.com/sekgate/gateway/internal/tlsfiles"
	"github.com/sekgate/gateway/shared/snapshot"
)

// linkConfig holds the settings of the link to the nodes and of the admin surface:
// the admin listener, token files, snapshot signing and TLS.
type linkConfig struct {
	AdminListen     string        `flag:"admin-listen" default:"127.0.0.1:8082" help:"address of the admin API's own listener (keep it on loopback or a private network)"`
	AdminTokenFile  string        `flag:"admin-token-file" help:"file holding the admin API token (instead of --admin-token)"`
	NodeTokensFile  string        `flag:"node-tokens-file" help:"file holding the node tokens, one per line (instead of --node-tokens)"`
	SigningKeyFile  string        `flag:"snapshot-signing-key-file" help:"ed25519 private key signing snapshots, PEM or 32-byte seed (required)"`
	Reissue         time.Duration `flag:"snapshot-reissue-interval" default:"1h" help:"re-sign the current snapshot this often (well under the nodes' --snapshot-max-age)"`
	TLSCert         string        `flag:"tls-cert-file" help:"PEM certificate of the node-facing listener (TLS with --tls-key-file; re-read on change)"`
	TLSKey          string        `flag:"tls-key-file" help:"PEM private key of the node-facing listener"`
	TLSClientCAFile string        `flag:"tls-client-ca-file" help:"PEM CA bundle; when set, nodes must present a client certificate it signed (mTLS)"`
}

// resolve reads the token files into c and checks what the link needs.
func (l *linkConfig) resolve(c *Config) error {
	var err error
	if c.AdminToken, err = oneOf("admin token", "--admin-token", c.AdminToken, "--admin-token-file", l.AdminTokenFile); err != nil {
		return err
	}
	if c.NodeTokens, err = oneOf("node tokens", "--node-tokens", c.NodeTokens, "--node-tokens-file", l.NodeTokensFile); err != nil {
		return err
	}
	if l.NodeTokensFile != "" { // lines (or spaces) to the list form
		c.NodeTokens = flagenv.NewSecret(strings.Join(strings.Fields(c.NodeTokens.Reveal()), ","))
	}
	admin, nodes := c.AdminToken.Reveal(), c.NodeTokens.Reveal()
	switch {
	case admin == "":
		return errors.New("--admin-token-file or --admin-token (GATEWAY_ADMIN_TOKEN) is required")
	case strings.Trim(nodes, ", ") == "":
		return errors.New("--node-tokens-file or --node-tokens (GATEWAY_NODE_TOKENS) is required")
	case l.SigningKeyFile == "":
		return errors.New("--snapshot-signing-key-file (GATEWAY_SNAPSHOT_SIGNING_KEY_FILE) is required")
	case (l.TLSCert == "") != (l.TLSKey == ""):
		return errors.New("--tls-cert-file and --tls-key-file go together")
	case l.TLSClientCAFile != "" && l.TLSCert == "":
		return errors.New("--tls-client-ca-file needs TLS (--tls-cert-file, --tls-key-file)")
	case l.Reissue <= 0:
		return errors.New("--snapshot-reissue-interval must be positive")
	}
	if err := api.CheckToken("admin token", admin); err != nil {
		return err
	}
	for _, t := range strings.Split(nodes, ",") {
		if t = strings.TrimSpace(t); t != "" {
			if err := api.CheckToken("node token", t); err != nil {
				return err
			}
		}
	}
	return nil
}

// oneOf returns the secret given directly or read from file; giving both is an error.
func oneOf(what, flagName string, direct flagenv.Secret, fileFlag, file string) (flagenv.Secret, error) {
	if file == "" {
		return direct, nil
	}
	if direct.Reveal() != "" {
		return flagenv.Secret{}, fmt.Errorf("%s: give %s or %s, not both", what, flagName, fileFlag)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return flagenv.Secret{}, fmt.Errorf("%s: %w", what, err)
	}
	return flagenv.NewSecret(tokenLines(b)), nil
}

// tokenLines keeps the non-empty lines of b that are not # comments, joined by newlines.
func tokenLines(b []byte) string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func (l *linkConfig) signingKey() (ed25519.PrivateKey, error) {
	return snapshot.ReadPrivateKeyFile(l.SigningKeyFile)
}

// serverTLS is the node-facing listener's TLS configuration, nil without TLS.
func (l *linkConfig) serverTLS(log *slog.Logger) (*tls.Config, error) {
	if l.TLSCert == "" {
		return nil, nil
	}
	return tlsfiles.ServerConfig(l.TLSCert, l.TLSKey, l.TLSClientCAFile, log)
}
