package gatewayctl

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/adminclient"
	"github.com/sekgate/gateway/shared/money"
)

func (a *app) auditCmd() *cobra.Command {
	var q adminclient.AuditQuery
	c := &cobra.Command{
		Use:   "audit",
		Short: "Show the audit log: every change made through the admin API, who made it and when, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			p, raw, err := c.ListAudit(cmd.Context(), q)
			if err != nil {
				return fmt.Errorf("read audit log: %w", err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			rows := make([][]string, 0, len(p.Data))
			for _, e := range p.Data {
				rows = append(rows, []string{itoa(e.ID), fmtTime(e.At), e.Actor, credentialWords(e), e.Role, e.Action, dash(e.Target), itoa(int64(e.Status))})
			}
			if err := a.table([]any{"ID", "At", "Actor", "Via", "Role", "Action", "Target", "Status"}, rows); err != nil {
				return err
			}
			if p.NextBefore != nil {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "older entries: --before %d\n", *p.NextBefore)
			}
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&q.Target, "target", "", "only changes of this account, key, signup or operator")
	f.StringVar(&q.Actor, "actor", "", `only changes by this actor ("token" or "operator:<name>")`)
	f.Int64Var(&q.Before, "before", 0, "only entries older than this ID (to page back)")
	f.IntVar(&q.Limit, "limit", 50, "how many entries (1 to 1000)")
	return c
}

// credentialWords says what made an audited change: "admin token (break-glass)",
// "session", "OIDC session" or "token <name> (<id>)"; "-" when not recorded.
func credentialWords(e adminapi.AuditEntry) string {
	switch e.Credential {
	case adminapi.CredentialAdminToken:
		return "admin token (break-glass)"
	case adminapi.CredentialSession:
		return "session"
	case adminapi.CredentialOIDCSession:
		return "OIDC session"
	case adminapi.CredentialOperatorToken:
		return "token " + clean(e.TokenName) + " (" + e.TokenID + ")"
	}
	return "-"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// readPassword reads a password from the first line of r (--password-stdin).
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", errors.New("no password on standard input")
	}
	return pw, nil
}

func (a *app) operatorsCmd() *cobra.Command {
	return group("operators", "Manage console operators (admin role)", a.operatorsCreateCmd(), a.operatorsListCmd(), a.operatorsSetCmd())
}

// operatorsCreateCmd is operators create.
func (a *app) operatorsCreateCmd() *cobra.Command {
	var role, email string
	var withPassword bool
	createCmd := &cobra.Command{
		Use:   "create NAME --role viewer|operator|admin [--email E [--password-stdin]]",
		Short: "Add a console operator; the password is read from standard input (first line)",
		Long: `Add a console operator. The password is read from the first line of standard input.
With --email (the address an OIDC provider vouches for, for console sign-in through it) the
operator needs no password; give --password-stdin to set one as well.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var pw string
			if email == "" || withPassword {
				var err error
				if pw, err = readPassword(cmd.InOrStdin()); err != nil {
					return err
				}
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			o, raw, err := c.CreateOperator(cmd.Context(), adminapi.CreateOperatorRequest{Name: args[0], Role: role, Password: pw, Email: email})
			if err != nil {
				return fmt.Errorf("create operator: %w", err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			return a.table([]any{"Name", "Role", "Created"}, [][]string{{o.Name, o.Role, fmtTime(o.CreatedAt)}})
		},
	}
	createCmd.Flags().StringVar(&role, "role", "viewer", "viewer, operator or admin")
	createCmd.Flags().StringVar(&email, "email", "", "the operator's email, for console sign-in through OIDC")
	createCmd.Flags().BoolVar(&withPassword, "password-stdin", false, "with --email, also read a password from standard input")
	return createCmd
}

// operatorsListCmd is operators list.
func (a *app) operatorsListCmd() *cobra.Command {
	listCmd := &cobra.Command{
		Use:   "list",
		Short: "List operators and their roles",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, raw, err := c.ListOperators(cmd.Context())
			if err != nil {
				return fmt.Errorf("list operators: %w", err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			rows := make([][]string, 0, len(l.Data))
			for _, o := range l.Data {
				rows = append(rows, []string{o.Name, o.Role, dash(o.Email), fmt.Sprint(o.Disabled), fmtTime(o.CreatedAt)})
			}
			return a.table([]any{"Name", "Role", "Email", "Disabled", "Created"}, rows)
		},
	}
	return listCmd
}

// operatorsSetCmd is operators set.
func (a *app) operatorsSetCmd() *cobra.Command {
	var disable, enable bool
	var setRole, setEmail string
	var setPassword bool
	setCmd := &cobra.Command{
		Use:   "set NAME [--role R] [--password-stdin] [--email E] [--disable|--enable]",
		Short: "Change an operator's role, password or disabled state (ends the operator's sessions)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var p adminapi.PatchOperatorRequest
			if setRole != "" {
				p.Role = &setRole
			}
			if setPassword {
				pw, err := readPassword(cmd.InOrStdin())
				if err != nil {
					return err
				}
				p.Password = &pw
			}
			if disable || enable {
				p.Disabled = &disable
			}
			if cmd.Flags().Changed("email") {
				p.Email = &setEmail
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			o, raw, err := c.PatchOperator(cmd.Context(), args[0], p)
			if err != nil {
				return fmt.Errorf("change operator: %w", err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			return a.table([]any{"Name", "Role", "Disabled"}, [][]string{{o.Name, o.Role, fmt.Sprint(o.Disabled)}})
		},
	}
	setCmd.Flags().StringVar(&setRole, "role", "", "new role: viewer, operator or admin")
	setCmd.Flags().BoolVar(&setPassword, "password-stdin", false, "read a new password from standard input")
	setCmd.Flags().StringVar(&setEmail, "email", "", `the operator's email for OIDC sign-in ("" removes it)`)
	setCmd.Flags().BoolVar(&disable, "disable", false, "disable the operator")
	setCmd.Flags().BoolVar(&enable, "enable", false, "enable the operator again")
	setCmd.MarkFlagsMutuallyExclusive("disable", "enable")
	return setCmd
}

func (a *app) adjustCmd() *cobra.Command {
	var reason, amountArg string
	c := &cobra.Command{
		Use:   "adjust ACCOUNT_ID --amount-sek AMOUNT --reason TEXT",
		Short: "Adjust an account's balance by a signed exact decimal amount of SEK, with a required reason",
		Long: `Append a manual adjustment (ledger kind adjustment) of either sign, e.g. -12.50 to take
back a credit given by mistake. The reason is required and kept in the ledger and the audit log.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return errors.New("--reason is required")
			}
			micro, err := money.ParseSEK(strings.TrimPrefix(amountArg, "-"))
			if err != nil || micro == 0 {
				return fmt.Errorf("--amount-sek %q: want a non-zero exact decimal SEK amount such as -12.50 or 3", amountArg)
			}
			if strings.HasPrefix(amountArg, "-") {
				micro = -micro
			}
			cl, err := a.client()
			if err != nil {
				return err
			}
			sign := ""
			if micro < 0 {
				sign = "-"
			}
			cr, raw, err := cl.Adjust(cmd.Context(), args[0], adminapi.AdjustmentRequest{AmountSEK: sign + money.FormatSEK(abs(micro)), Reason: reason})
			if err != nil {
				return fmt.Errorf("adjust %s: %w", args[0], err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			_, err = fmt.Fprintf(a.out, "Adjusted %s by %s%s SEK (ledger entry %d). Balance: %s SEK\n",
				clean(args[0]), sign, money.FormatSEK(abs(micro)), cr.EntryID, cr.BalanceSEK)
			return err
		},
	}
	c.Flags().StringVar(&amountArg, "amount-sek", "", "signed exact decimal SEK, e.g. -12.50 (required)")
	c.Flags().StringVar(&reason, "reason", "", "why (required)")
	return c
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
