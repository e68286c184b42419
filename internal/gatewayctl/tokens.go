package gatewayctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

func (a *app) whoamiCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "whoami",
		Short: "Show who your credential acts as: operator, role, credential and its expiry",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			w, raw, err := c.Whoami(cmd.Context())
			if err != nil {
				return fmt.Errorf("whoami: %w", err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			who, cred := w.Operator, w.Credential
			if who == "" {
				who = "(no operator: the shared admin token)"
			}
			if w.Token != nil {
				cred += " " + w.Token.ID + " (" + w.Token.Name + ", role " + w.Token.Role + ")"
			}
			rows := [][]string{{"Operator", who}, {"Role", w.Role}, {"Credential", cred}, {"Expires", fmtTimePtr(w.ExpiresAt)}}
			if w.OperatorRole != "" && w.OperatorRole != w.Role {
				rows = append(rows, []string{"Operator's own role", w.OperatorRole})
			}
			return a.table([]any{"Field", "Value"}, rows)
		},
	}
}

func (a *app) tokensCmd() *cobra.Command {
	return group("tokens", "Your operator API tokens: make, list and revoke them (an admin sees and revokes everyone's)",
		a.tokensCreateCmd(), a.tokensListCmd(), a.tokensRevokeCmd())
}

func (a *app) tokensCreateCmd() *cobra.Command {
	var in adminapi.CreateTokenRequest
	var expiresIn string
	var save bool
	c := &cobra.Command{
		Use:   "create NAME [--role R] [--expires-in 90d] [--save]",
		Short: "Make an operator token of your own; its secret is printed this once",
		Long: `Make an operator API token of your own, with a role no higher than yours (default: yours)
and an optional expiry. The secret is printed once; with --save it is written instead to the
token file (--token-file, GATEWAY_TOKEN_FILE or ~/.config/gatewayctl/token, mode 0600), which
gatewayctl then uses. With the shared admin token, --operator names whose token to make.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in.Name = args[0]
			if expiresIn != "" {
				d, err := parseExpiry(expiresIn)
				if err != nil {
					return err
				}
				t := time.Now().Add(d).UTC().Truncate(time.Second)
				in.ExpiresAt = &t
			}
			path := ""
			if save {
				if path = a.saveTarget(); path == "" {
					return errors.New("--save: no token file: give --token-file or set HOME")
				}
				if _, err := os.Stat(path); err == nil {
					return fmt.Errorf("--save: %s exists; remove it first or give another --token-file", path)
				}
			}
			cl, err := a.client()
			if err != nil {
				return err
			}
			ct, raw, err := cl.CreateToken(cmd.Context(), in)
			if err != nil {
				return fmt.Errorf("create token: %w", err)
			}
			if save {
				if err := writeTokenFile(path, ct.Secret); err != nil {
					return fmt.Errorf("token %s made, but not saved: %w (revoke it: gatewayctl tokens revoke %s)", ct.ID, err, ct.ID)
				}
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			if err := a.table([]any{"ID", "Name", "Operator", "Role", "Expires"},
				[][]string{{ct.ID, clean(ct.Name), ct.Operator, ct.Role, fmtTimePtr(ct.ExpiresAt)}}); err != nil {
				return err
			}
			if save {
				_, err = fmt.Fprintf(a.out, "Saved to %s; gatewayctl uses it from now on.\n", path)
				return err
			}
			_, err = fmt.Fprintf(a.out, "Secret (shown once; keep it like a password): %s\n", ct.Secret)
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&in.Role, "role", "", "viewer, operator or admin, at most yours (default: yours)")
	f.StringVar(&expiresIn, "expires-in", "", "expire after this long: days such as 90d, or a duration such as 12h (default: never)")
	f.StringVar(&in.Operator, "operator", "", "whose token to make (only with the shared admin token)")
	f.BoolVar(&save, "save", false, "write the secret to the token file instead of printing it")
	return c
}

func (a *app) tokensListCmd() *cobra.Command {
	var operator string
	c := &cobra.Command{
		Use:   "list [--operator NAME]",
		Short: "List your operator tokens (an admin: everyone's), newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := a.client()
			if err != nil {
				return err
			}
			l, raw, err := cl.ListTokens(cmd.Context(), operator)
			if err != nil {
				return fmt.Errorf("list tokens: %w", err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			rows := make([][]string, 0, len(l.Data))
			for _, t := range l.Data {
				rows = append(rows, []string{t.ID, clean(t.Name), t.Operator, t.Role, t.State, fmtTime(t.CreatedAt),
					fmtTimePtr(t.ExpiresAt), fmtTimePtr(t.LastUsedAt)})
			}
			return a.table([]any{"ID", "Name", "Operator", "Role", "State", "Created", "Expires", "Last used"}, rows)
		},
	}
	c.Flags().StringVar(&operator, "operator", "", "only this operator's tokens (another operator's: admin only)")
	return c
}

func (a *app) tokensRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke TOKEN_ID",
		Short: "Revoke an operator token for good (yours, or anyone's as an admin)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client()
			if err != nil {
				return err
			}
			t, raw, err := cl.RevokeToken(cmd.Context(), args[0])
			if err != nil {
				return fmt.Errorf("revoke token %s: %w", clean(args[0]), err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			_, err = fmt.Fprintf(a.out, "Revoked %s (%s of %s) at %s.\n", t.ID, clean(t.Name), t.Operator, fmtTimePtr(t.RevokedAt))
			return err
		},
	}
}

// parseExpiry reads "90d" (days) or a Go duration such as "12h"; it must be positive.
func parseExpiry(s string) (time.Duration, error) {
	bad := fmt.Errorf("--expires-in %q: want days such as 90d or a duration such as 12h", s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 1 || n > 3650 {
			return 0, bad
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, bad
	}
	return d, nil
}

// saveTarget is where --save writes: --token-file, GATEWAY_TOKEN_FILE or the default.
func (a *app) saveTarget() string {
	if a.tokenFile != "" {
		return a.tokenFile
	}
	if f := a.getenv("GATEWAY_TOKEN_FILE"); f != "" {
		return f
	}
	return a.tokenFileDefault()
}

// writeTokenFile writes a new file of mode 0600 holding the token (never over an existing
// one).
func writeTokenFile(path, token string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(token + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
