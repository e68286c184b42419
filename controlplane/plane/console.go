package plane

import (
	"errors"
	"flag"
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
	disable         bool
	insecureCookies bool
	testBoxURL      string
	testBoxToken    flagenv.Secret
}

func (c *consoleConfig) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.disable, "disable-console", false, "do not serve the operator console (/console/ on the admin listener)")
	fs.BoolVar(&c.insecureCookies, "console-insecure-cookies", false, "leave Secure off the console's cookies (plain HTTP off localhost only)")
	fs.StringVar(&c.testBoxURL, "test-box-url", "", "base URL of a data plane's --test-box-listen, https or loopback http (empty: no test box)")
	fs.Var(&c.testBoxToken, "test-box-token", "the test box's own token, the data plane's --test-box-token (not a node token)")
}

// testBox returns the test-box client, or nil when no data plane is configured.
func (c *consoleConfig) testBox(nodeTokens string) (api.TestBox, error) {
	if c.testBoxURL == "" {
		return nil, nil
	}
	tok := strings.TrimSpace(c.testBoxToken.Reveal())
	if len(tok) < internalapi.MinTokenBytes {
		return nil, fmt.Errorf("--test-box-url needs --test-box-token of at least %d bytes", internalapi.MinTokenBytes)
	}
	for _, n := range strings.Split(nodeTokens, ",") {
		if strings.TrimSpace(n) == tok {
			return nil, errors.New("--test-box-token must not be a node token")
		}
	}
	return testbox.New(testbox.Config{URL: c.testBoxURL, Token: tok})
}

// handler serves the console under /console/ beside the admin API.
func (c *consoleConfig) handler(admin http.Handler, log *slog.Logger) (http.Handler, error) {
	if c.disable {
		return admin, nil
	}
	con, err := console.New(console.Config{API: admin, InsecureCookies: c.insecureCookies, Logger: log})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(console.Prefix, con)
	mux.Handle("/", admin)
	return mux, nil
}
