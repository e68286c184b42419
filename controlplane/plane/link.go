package plane

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"flag"
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
	adminListen                      string
	adminTokenFile, nodeTokensFile   string
	signingKeyFile                   string
	reissue                          time.Duration
	tlsCert, tlsKey, tlsClientCAFile string
}

func (l *linkConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&l.adminListen, "admin-listen", "127.0.0.1:8082", "address of the admin API's own listener (keep it on loopback or a private network)")
	fs.StringVar(&l.adminTokenFile, "admin-token-file", "", "file holding the admin API token (instead of --admin-token)")
	fs.StringVar(&l.nodeTokensFile, "node-tokens-file", "", "file holding the node tokens, one per line (instead of --node-tokens)")
	fs.StringVar(&l.signingKeyFile, "snapshot-signing-key-file", "", "ed25519 private key signing snapshots, PEM or 32-byte seed (required)")
	fs.DurationVar(&l.reissue, "snapshot-reissue-interval", time.Hour, "re-sign the current snapshot this often (well under the nodes' --snapshot-max-age)")
	fs.StringVar(&l.tlsCert, "tls-cert-file", "", "PEM certificate of the node-facing listener (TLS with --tls-key-file; re-read on change)")
	fs.StringVar(&l.tlsKey, "tls-key-file", "", "PEM private key of the node-facing listener")
	fs.StringVar(&l.tlsClientCAFile, "tls-client-ca-file", "", "PEM CA bundle; when set, nodes must present a client certificate it signed (mTLS)")
}

// resolve reads the token files into c and checks what the link needs.
func (l *linkConfig) resolve(c *Config) error {
	var err error
	if c.adminToken, err = oneOf("admin token", "--admin-token", c.adminToken, "--admin-token-file", l.adminTokenFile); err != nil {
		return err
	}
	if c.nodeTokens, err = oneOf("node tokens", "--node-tokens", c.nodeTokens, "--node-tokens-file", l.nodeTokensFile); err != nil {
		return err
	}
	if l.nodeTokensFile != "" { // lines (or spaces) to the list form
		c.nodeTokens = flagenv.NewSecret(strings.Join(strings.Fields(c.nodeTokens.Reveal()), ","))
	}
	admin, nodes := c.adminToken.Reveal(), c.nodeTokens.Reveal()
	switch {
	case admin == "":
		return errors.New("--admin-token-file or --admin-token (GATEWAY_ADMIN_TOKEN) is required")
	case strings.Trim(nodes, ", ") == "":
		return errors.New("--node-tokens-file or --node-tokens (GATEWAY_NODE_TOKENS) is required")
	case l.signingKeyFile == "":
		return errors.New("--snapshot-signing-key-file (GATEWAY_SNAPSHOT_SIGNING_KEY_FILE) is required")
	case (l.tlsCert == "") != (l.tlsKey == ""):
		return errors.New("--tls-cert-file and --tls-key-file go together")
	case l.tlsClientCAFile != "" && l.tlsCert == "":
		return errors.New("--tls-client-ca-file needs TLS (--tls-cert-file, --tls-key-file)")
	case l.reissue <= 0:
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
	return snapshot.ReadPrivateKeyFile(l.signingKeyFile)
}

// serverTLS is the node-facing listener's TLS configuration, nil without TLS.
func (l *linkConfig) serverTLS(log *slog.Logger) (*tls.Config, error) {
	if l.tlsCert == "" {
		return nil, nil
	}
	return tlsfiles.ServerConfig(l.tlsCert, l.tlsKey, l.tlsClientCAFile, log)
}
