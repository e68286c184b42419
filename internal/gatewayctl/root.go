// Package cli is gatewayctl's command tree: an operator CLI over the control plane's admin
// API, printing readable tables or, with --json, the API's JSON.
package gatewayctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/sekgate/gateway/controlplane/adminclient"
	"github.com/sekgate/gateway/internal/version"
)

// DefaultAdminURL is used when neither --admin-url nor GATEWAY_ADMIN_URL is set.
const DefaultAdminURL = "http://127.0.0.1:8082" // the control plane's --admin-listen default

// app holds the global flags and the output streams.
type app struct {
	adminURL   string
	token      string // --token
	adminToken string // --admin-token
	tokenFile  string // --token-file
	jsonOut    bool
	csvOut     bool
	out        io.Writer
	errOut     io.Writer
	getenv     func(string) string
}

// Main runs gatewayctl with args and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return run(ctx, args, stdout, stderr, os.Getenv)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	a := &app{out: stdout, errOut: stderr, getenv: getenv}
	root := a.root()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "gatewayctl:", cleanLines(explain(err, a.adminURL)))
		return 1
	}
	return 0
}

func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "gatewayctl",
		Short: "Operate the gateway through the control plane's admin API",
		Long: `gatewayctl drives the control plane's admin API: accounts, credit, API keys, which
models an account may use, the model catalogue and routes, data-plane nodes and snapshots.

The admin API address comes from --admin-url / GATEWAY_ADMIN_URL (default ` + DefaultAdminURL + `).
The credential is your operator token (make one in the console under "API tokens", or with
gatewayctl tokens create): --token, else GATEWAY_TOKEN, else the file --token-file /
GATEWAY_TOKEN_FILE, else $XDG_CONFIG_HOME/gatewayctl/token (~/.config/gatewayctl/token),
which must be readable by you only. The shared admin token (--admin-token /
GATEWAY_ADMIN_TOKEN) still works, as the bootstrap and break-glass credential; the audit
log then names no person. gatewayctl whoami shows who you act as.

Output is a readable table unless --json (or, for listings, --csv) is given.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
	}
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.AddCommand(a.whoamiCmd(), a.tokensCmd())
	url := a.getenv("GATEWAY_ADMIN_URL")
	if url == "" {
		url = DefaultAdminURL
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.adminURL, "admin-url", url, "control plane admin API address (env GATEWAY_ADMIN_URL)")
	pf.StringVar(&a.token, "token", "", "your operator token, gwo_... (env GATEWAY_TOKEN)")
	pf.StringVar(&a.tokenFile, "token-file", "", "file holding your operator token, mode 0600 (env GATEWAY_TOKEN_FILE; default ~/.config/gatewayctl/token)")
	pf.StringVar(&a.adminToken, "admin-token", "", "the shared admin token, for bootstrap and break-glass (env GATEWAY_ADMIN_TOKEN)")
	pf.BoolVar(&a.jsonOut, "json", false, "print the API's JSON instead of tables")
	pf.BoolVar(&a.csvOut, "csv", false, "print records, usage and ledger listings as CSV")
	root.AddCommand(a.accountsCmd(), a.creditCmd(), a.keysCmd(), a.modelsCmd(), a.routesCmd(),
		a.catalogCmd(), a.nodesCmd(), a.snapshotCmd(), a.signupsCmd(), a.auditCmd(), a.operatorsCmd(), a.adjustCmd(),
		a.recordsCmd(), a.usageCmd(), a.ledgerCmd(), a.refusalsCmd(), a.seriesCmd(), a.alertsCmd())
	return root
}

// client builds the admin client from the global flags.
func (a *app) client() (*adminclient.Client, error) {
	tok, err := a.credential()
	if err != nil {
		return nil, err
	}
	return adminclient.New(adminclient.Config{BaseURL: a.adminURL, Token: tok})
}

// explain adds a hint to errors an operator can act on.
func explain(err error, adminURL string) string {
	var netErr *net.OpError
	switch {
	case errors.Is(err, adminclient.ErrUnauthorized):
		return err.Error() + " (check --token, GATEWAY_TOKEN or the token file; or --admin-token / GATEWAY_ADMIN_TOKEN)"
	case errors.Is(err, adminclient.ErrForbidden):
		return err.Error() + " (gatewayctl whoami shows your role)"
	case errors.As(err, &netErr):
		return err.Error() + " (is the control plane running at " + adminURL + "?)"
	}
	return err.Error()
}

// group returns a command that only holds subcommands.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() }}
	c.AddCommand(subs...)
	return c
}
