package plane

import (
	"flag"
	"log/slog"
	"net/http"
	"strings"

	"github.com/sekgate/gateway/controlplane/api"
	"github.com/sekgate/gateway/controlplane/console"
	"github.com/sekgate/gateway/controlplane/testbox"
)

// consoleConfig holds the operator console's flags.
type consoleConfig struct {
	disable         bool
	insecureCookies bool
	testBoxURL      string
}

func (c *consoleConfig) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.disable, "disable-console", false, "do not serve the operator console (/console/ on the admin listener)")
	fs.BoolVar(&c.insecureCookies, "console-insecure-cookies", false, "leave Secure off the console's cookies (plain HTTP off localhost only)")
	fs.StringVar(&c.testBoxURL, "test-box-url", "", "base URL of the data plane the console's test box sends to (empty: no test box)")
}

// testBox returns the test-box client, or nil when no data plane is configured.
func (c *consoleConfig) testBox(nodeTokens string) (api.TestBox, error) {
	if c.testBoxURL == "" {
		return nil, nil
	}
	tok, _, _ := strings.Cut(nodeTokens, ",")
	return testbox.New(testbox.Config{URL: c.testBoxURL, NodeToken: strings.TrimSpace(tok)})
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
