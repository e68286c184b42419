package gatewayctl

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

func (a *app) keysCmd() *cobra.Command {
	return group("keys", "Create, list and revoke API keys and set their limits",
		a.keysCreateCmd(), a.keysListCmd(), a.keysRevokeCmd(), a.keysSetLimitsCmd(), a.setBudgetCmd(true))
}

// keysCreateCmd is keys create.
func (a *app) keysCreateCmd() *cobra.Command {
	var name string
	var days int
	create := &cobra.Command{
		Use:   "create ACCOUNT_ID [--name NAME] [--expires-in-days N]",
		Short: "Issue an API key; its secret is printed once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("expires-in-days") && (days < 30 || days > 365) {
				return fmt.Errorf("--expires-in-days %d: want 30 to 365", days)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			k, raw, err := c.CreateKey(cmd.Context(), args[0], adminapi.CreateKeyRequest{Name: name, ExpiresInDays: days})
			if err != nil {
				return fmt.Errorf("create key for %s: %w", args[0], err)
			}
			fmt.Fprintln(a.errOut, "Warning: the key's secret is shown only now; it cannot be shown again. Store it safely.")
			if a.jsonOut {
				return a.printJSON(raw)
			}
			return a.details(
				"Key ID", k.ID,
				"Account", k.AccountID,
				"Name", orDash(k.Name),
				"Created", fmtTime(k.CreatedAt),
				"Expires", fmtTimePtr(k.ExpiresAt),
				"Secret", k.Secret,
			)
		},
	}
	create.Flags().StringVar(&name, "name", "", "a name to recognise the key by")
	create.Flags().IntVar(&days, "expires-in-days", 0, "expire the key after N days (30 to 365; default: no expiry)")

	return create
}

// keysListCmd is keys list.
func (a *app) keysListCmd() *cobra.Command {
	listCmd := &cobra.Command{
		Use:   "list ACCOUNT_ID",
		Short: "List an account's keys (never their secrets)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, raw, err := c.ListKeys(cmd.Context(), args[0])
			if err != nil {
				return fmt.Errorf("list keys of %s: %w", args[0], err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			return a.keysTable(l.Data, time.Now())
		},
	}
	return listCmd
}

// keysRevokeCmd is keys revoke.
func (a *app) keysRevokeCmd() *cobra.Command {
	revoke := &cobra.Command{
		Use:   "revoke KEY_ID",
		Short: "Revoke a key",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			k, raw, err := c.RevokeKey(cmd.Context(), args[0])
			if err != nil {
				return fmt.Errorf("revoke key %s: %w", args[0], err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			_, err = fmt.Fprintf(a.out, "Revoked key %s of account %s at %s\n", clean(k.ID), clean(k.AccountID), fmtTimePtr(k.RevokedAt))
			return err
		},
	}
	return revoke
}

// keysSetLimitsCmd is keys set-limits.
func (a *app) keysSetLimitsCmd() *cobra.Command {
	setLimits := &cobra.Command{
		Use:   "set-limits KEY_ID (--rps N [--burst N] [--max-concurrent N] | --clear)",
		Short: "Set a key's own request limits (without them a key is limited through its account)",
		Args:  cobra.ExactArgs(1),
	}
	keyLimits := limitsFlags(setLimits, "remove the key's own limits (it is limited through its account only)")
	setLimits.RunE = func(cmd *cobra.Command, args []string) error {
		l, err := keyLimits()
		if err != nil {
			return err
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		k, raw, err := c.SetKeyLimits(cmd.Context(), args[0], l)
		if err != nil {
			return fmt.Errorf("set limits of key %s: %w", args[0], err)
		}
		if a.jsonOut {
			return a.printJSON(raw)
		}
		return a.keysTable([]adminapi.Key{k}, time.Now())
	}
	return setLimits
}

// keysTable lists keys with their state and limits: their own, the effective ones and
// where those come from.
func (a *app) keysTable(keys []adminapi.Key, now time.Time) error {
	rows := make([][]string, 0, len(keys))
	for _, k := range keys {
		value, source := effective(k.EffectiveLimits)
		rows = append(rows, []string{k.ID, orDash(k.Name), k.Status(now), fmtTime(k.CreatedAt),
			fmtTimePtr(k.ExpiresAt), fmtTimePtr(k.RevokedAt), fmtTimePtr(k.LastUsedAt), ownLimits(k.Limits), value, source})
	}
	return a.table([]any{"ID", "Name", "Status", "Created", "Expires", "Revoked", "Last used", "Own limits", "Effective limits", "From"}, rows)
}
