package gatewayctl

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

func (a *app) signupsCmd() *cobra.Command {
	return group("signups", "Review access requests from the signup form", a.signupsListCmd(), a.signupsApproveCmd(), a.signupsRejectCmd())
}

// signupsListCmd is signups list.
func (a *app) signupsListCmd() *cobra.Command {
	var status string
	var limit int
	listCmd := &cobra.Command{
		Use:   "list [--status pending|approved|rejected|all] [--limit N]",
		Short: "List access requests from the signup form, newest first (default: pending)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			want := status
			switch status {
			case "all":
				want = ""
			case "pending", "approved", "rejected":
			default:
				return fmt.Errorf("--status %q: want pending, approved, rejected or all", status)
			}
			if limit < 1 || limit > 1000 {
				return fmt.Errorf("--limit %d: want 1 to 1000", limit)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			l, raw, err := c.ListSignups(cmd.Context(), want, limit)
			if err != nil {
				return fmt.Errorf("list signups: %w", err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			rows := make([][]string, 0, len(l.Data))
			for _, s := range l.Data {
				acct := "-"
				if s.AccountID != nil {
					acct = *s.AccountID
				}
				rows = append(rows, []string{s.ID, s.Status, fmtTime(s.CreatedAt), s.Name, s.Email, orDash(s.Company),
					orDash(s.Residency), orDash(s.Volume), acct})
			}
			return a.table([]any{"ID", "Status", "Created", "Name", "Email", "Company", "Residency", "Volume", "Account"}, rows)
		},
	}
	listCmd.Flags().StringVar(&status, "status", "pending", "pending, approved, rejected or all")
	listCmd.Flags().IntVar(&limit, "limit", 100, "at most this many (1 to 1000)")
	return listCmd
}

// signupsApproveCmd is signups approve.
func (a *app) signupsApproveCmd() *cobra.Command {
	var createAccount bool
	var residency string
	approve := &cobra.Command{
		Use:   "approve SIGNUP_ID [--create-account [--residency se|eu|any]]",
		Short: "Approve an access request; with --create-account also create its account",
		Long: `Approve an access request. Approval alone creates nothing. With --create-account the
account is created in the same step (customer = the company, else the name) with the residency
given by --residency, or the form's residency when it is se, eu or any. Keys and models are
then set up with "gatewayctl keys" and "gatewayctl models".`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if residency != "" && !createAccount {
				return fmt.Errorf("--residency needs --create-account")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			body := adminapi.ApproveSignupRequest{CreateAccount: createAccount, Residency: residency}
			s, raw, err := c.ApproveSignup(cmd.Context(), args[0], body)
			if err != nil {
				return fmt.Errorf("approve signup %s: %w", args[0], err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			return a.signupDetails(s)
		},
	}
	approve.Flags().BoolVar(&createAccount, "create-account", false, "also create the account")
	approve.Flags().StringVar(&residency, "residency", "", "residency of the new account: se, eu or any")
	return approve
}

// signupsRejectCmd is signups reject.
func (a *app) signupsRejectCmd() *cobra.Command {
	reject := &cobra.Command{
		Use:   "reject SIGNUP_ID",
		Short: "Reject an access request",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			s, raw, err := c.RejectSignup(cmd.Context(), args[0])
			if err != nil {
				return fmt.Errorf("reject signup %s: %w", args[0], err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			return a.signupDetails(s)
		},
	}
	return reject
}

func (a *app) signupDetails(s adminapi.Signup) error {
	acct := "-"
	if s.AccountID != nil {
		acct = *s.AccountID
	}
	return a.details(
		"Signup ID", s.ID,
		"Status", s.Status,
		"Name", s.Name,
		"Email", s.Email,
		"Company", orDash(s.Company),
		"Residency", orDash(s.Residency),
		"Created", fmtTime(s.CreatedAt),
		"Decided", fmtTimePtr(s.DecidedAt),
		"Account", acct,
	)
}
