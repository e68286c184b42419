package plane

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/sekgate/gateway/controlplane/api"
	"github.com/sekgate/gateway/controlplane/console"
	"github.com/sekgate/gateway/controlplane/testbox"
	"github.com/sekgate/gateway/internal/flagenv"
	"github.com/sekgate/gateway/shared/internalapi"
)

// consoleConfig holds the operator console's flags.
type consoleConfig struct {
	Disable         bool           `flag:"disable-console" help:"do not serve the operator console (/console/ on the admin listener)"`
	InsecureCookies bool           `flag:"console-insecure-cookies" help:"leave Secure off the console's cookies (plain HTTP off localhost only)"`
	TestBoxURL      string         `flag:"test-box-url" help:"base URL of a data plane's --test-box-listen, https or loopback http (empty: no test box)"`
	TestBoxToken    flagenv.Secret `flag:"test-box-token" help:"the test box's own token, the data plane's --test-box-token (not a node token)"`
}

// testBox returns the test-box client, or nil when no data plane is configured.
func (c *consoleConfig) testBox(nodeTokens string) (api.TestBox, error) {
	if c.TestBoxURL == "" {
		return nil, nil
	}
	tok := strings.TrimSpace(c.TestBoxToken.Reveal())
	if len(tok) < internalapi.MinTokenBytes {
		return nil, fmt.Errorf("--test-box-url needs --test-box-token of at least %d bytes", internalapi.MinTokenBytes)
	}
	for _, n := range strings.Split(nodeTokens, ",") {
		if strings.TrimSpace(n) == tok {
			return nil, errors.New("--test-box-token must not be a node token")
		}
	}
	return testbox.New(testbox.Config{URL: c.TestBoxURL, Token: tok})
}

// handler serves the console under /console/ beside the admin API.
func (c *consoleConfig) handler(admin http.Handler, oidc console.OIDCStarter, log *slog.Logger) (http.Handler, error) {
	if c.Disable {
		return admin, nil
	}
	con, err := console.New(console.Config{API: admin, InsecureCookies: c.InsecureCookies, OIDC: oidc, Logger: log})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(console.Prefix, con)
	mux.Handle("/", admin)
	return mux, nil
}
