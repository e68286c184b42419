package gatewayctl

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/snapshot"
)

// setBudgetCmd is "accounts set-budget" (key false) or "keys set-budget".
func (a *app) setBudgetCmd(key bool) *cobra.Command {
	what, whose, also := "ACCOUNT_ID", "the account's", ""
	if key {
		what, whose, also = "KEY_ID", "the key's own", " Its account's budget applies as well."
	}
	var limit, period string
	var clear bool
	cmd := &cobra.Command{
		Use:   "set-budget " + what + " (--limit SEK [--period day|week|month] | --clear)",
		Short: "Cap " + whose + " spend per UTC day, week or month",
		Long: "Set " + whose + " spend budget. Nodes refuse new inference with 402 budget_exceeded once the period's " +
			"spend reaches it, until the period resets (00:00 UTC; weeks start on Monday)." + also,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var req *adminapi.SetBudgetRequest
			switch {
			case clear && limit != "":
				return errors.New("give --limit or --clear, not both")
			case clear:
			case limit == "":
				return errors.New("--limit SEK or --clear is required")
			default:
				if micro, err := money.ParseSEK(limit); err != nil || micro <= 0 {
					return fmt.Errorf("--limit %q: want a positive amount of SEK such as 500 or 12.50", limit)
				}
				if !snapshot.ValidPeriod(period) {
					return fmt.Errorf("--period %q: want day, week or month", period)
				}
				req = &adminapi.SetBudgetRequest{Period: period, LimitSEK: limit}
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			st, raw, err := c.SetBudget(cmd.Context(), key, args[0], req)
			if err != nil {
				return fmt.Errorf("set budget of %s: %w", args[0], err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			if st.Budget == nil {
				_, err = fmt.Fprintf(a.out, "No budget on %s\n", clean(args[0]))
				return err
			}
			return a.budgetsTable([]adminapi.Budget{*st.Budget})
		},
	}
	cmd.Flags().StringVar(&limit, "limit", "", "the cap in SEK, e.g. 500 or 12.50")
	cmd.Flags().StringVar(&period, "period", snapshot.PeriodMonth, "day, week or month (UTC)")
	cmd.Flags().BoolVar(&clear, "clear", false, "remove "+whose+" budget")
	return cmd
}

// budgetsCmd is "accounts budgets ACCOUNT_ID".
func (a *app) budgetsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "budgets ACCOUNT_ID",
		Short: "Show the account's budget and its keys', with the spend of the current period",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, raw, err := c.ListBudgets(cmd.Context(), args[0])
			if err != nil {
				return fmt.Errorf("budgets of %s: %w", args[0], err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			return a.budgetsTable(l.Data)
		},
	}
}

func (a *app) budgetsTable(bs []adminapi.Budget) error {
	rows := make([][]string, 0, len(bs))
	for _, b := range bs {
		whose := "account"
		if b.KeyID != "" {
			whose = "key " + b.KeyID
			if b.KeyName != "" {
				whose += " (" + b.KeyName + ")"
			}
		}
		used := fmt.Sprintf("%d%%", b.UsedPercent())
		rows = append(rows, []string{whose, b.Period, b.LimitSEK, b.SpentSEK, used, fmtTime(b.ResetsAt)})
	}
	return a.table([]any{"Budget of", "Period", "Limit SEK", "Spent SEK", "Used", "Resets"}, rows)
}
