package gatewayctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/residency"
	"github.com/sekgate/gateway/shared/snapshot"
)

func (a *app) accountsCmd() *cobra.Command {
	var customer, res string
	var weight int
	create := &cobra.Command{
		Use:   "create --customer NAME --residency se|eu|any [--queue-weight N]",
		Short: "Create an account",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(customer) == "" {
				return errors.New("--customer is required")
			}
			if !residency.Valid(res) {
				return fmt.Errorf("--residency %q: want se, eu or any", res)
			}
			if cmd.Flags().Changed("queue-weight") && !snapshot.ValidQueueWeight(weight) {
				return fmt.Errorf("--queue-weight %d: %s", weight, weightRange)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			acct, raw, err := c.CreateAccount(cmd.Context(), adminapi.CreateAccountRequest{Customer: customer, Residency: res, QueueWeight: weight})
			if err != nil {
				return fmt.Errorf("create account: %w", err)
			}
			return a.showAccount(acct, raw)
		},
	}
	create.Flags().StringVar(&customer, "customer", "", "customer name (required)")
	create.Flags().StringVar(&res, "residency", "", "residency policy: se, eu or any (required)")
	create.Flags().IntVar(&weight, "queue-weight", 0, "turns in the nodes' fair queue per turn of a weight-1 account, 1..100 (default 1)")

	listCmd := &cobra.Command{
		Use:   "list",
		Short: "List accounts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, raw, err := c.ListAccounts(cmd.Context())
			if err != nil {
				return fmt.Errorf("list accounts: %w", err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			rows := make([][]string, 0, len(l.Data))
			for _, ac := range l.Data {
				rows = append(rows, []string{ac.ID, ac.Customer, ac.Residency, yesNo(ac.Suspended),
					balance(ac), itoa(int64(len(ac.Models))), itoa(int64(max(ac.QueueWeight, 1))), fmtTime(ac.CreatedAt)})
			}
			return a.table([]any{"ID", "Customer", "Residency", "Suspended", "Balance SEK", "Models", "Queue weight", "Created"}, rows)
		},
	}

	get := &cobra.Command{
		Use:   "get ACCOUNT_ID",
		Short: "Show one account",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			acct, raw, err := c.GetAccount(cmd.Context(), args[0])
			if err != nil {
				return fmt.Errorf("get account %s: %w", args[0], err)
			}
			return a.showAccount(acct, raw)
		},
	}

	return group("accounts", "Create, list, show, suspend accounts and set their residency, limits and queue weight",
		append([]*cobra.Command{create, listCmd, get, a.budgetsCmd(), a.setBudgetCmd(false)}, a.accountChangeCmds()...)...)
}

// accountChangeCmds are the accounts subcommands that change an account: suspend,
// unsuspend, set-residency, set-limits and set-queue-weight.
func (a *app) accountChangeCmds() []*cobra.Command {
	var reason string
	suspend := a.patchAccountCmd("suspend ACCOUNT_ID --reason TEXT", "Suspend an account (its keys stop working), saying why", 1,
		func([]string) (adminapi.PatchAccountRequest, error) {
			yes := true
			if strings.TrimSpace(reason) == "" {
				return adminapi.PatchAccountRequest{}, errors.New("--reason is required: say why the account is suspended")
			}
			return adminapi.PatchAccountRequest{Suspended: &yes, SuspensionReason: reason}, nil
		})
	suspend.Flags().StringVar(&reason, "reason", "", "why the account is suspended, kept with it until the suspension is lifted (required)")
	unsuspend := a.patchAccountCmd("unsuspend ACCOUNT_ID", "Lift an account's suspension", 1,
		func([]string) (adminapi.PatchAccountRequest, error) {
			no := false
			return adminapi.PatchAccountRequest{Suspended: &no}, nil
		})
	setRes := a.patchAccountCmd("set-residency ACCOUNT_ID se|eu|any", "Change an account's residency policy", 2,
		func(args []string) (adminapi.PatchAccountRequest, error) {
			if !residency.Valid(args[1]) {
				return adminapi.PatchAccountRequest{}, fmt.Errorf("residency %q: want se, eu or any", args[1])
			}
			return adminapi.PatchAccountRequest{Residency: &args[1]}, nil
		})

	setWeight := a.patchAccountCmd("set-queue-weight ACCOUNT_ID N",
		"Set an account's fair-queue weight, 1..100 (turns per turn of a weight-1 account)", 2,
		func(args []string) (adminapi.PatchAccountRequest, error) {
			n, err := strconv.Atoi(args[1])
			if err != nil || !snapshot.ValidQueueWeight(n) {
				return adminapi.PatchAccountRequest{}, fmt.Errorf("queue weight %q: %s", args[1], weightRange)
			}
			return adminapi.PatchAccountRequest{QueueWeight: &n}, nil
		})

	var acctLimits func() (json.RawMessage, error) // reads the command's flags, set below
	setLimits := a.patchAccountCmd("set-limits ACCOUNT_ID (--rps N [--burst N] [--max-concurrent N] [--hold-max-price] | --clear)",
		"Set an account's request limits (--clear: the deployment defaults apply)", 1,
		func([]string) (adminapi.PatchAccountRequest, error) {
			l, err := acctLimits()
			return adminapi.PatchAccountRequest{Limits: l}, err
		})
	acctLimits = limitsFlags(setLimits, "remove the account's own limits (the deployment defaults apply)")
	return []*cobra.Command{suspend, unsuspend, setRes, setLimits, setWeight}
}

// patchAccountCmd is an accounts subcommand that sends the PATCH build makes of its
// arguments and shows the account it answers.
func (a *app) patchAccountCmd(use, short string, nargs int, build func(args []string) (adminapi.PatchAccountRequest, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(nargs),
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := build(args)
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			acct, raw, err := c.PatchAccount(cmd.Context(), args[0], req)
			if err != nil {
				return fmt.Errorf("update account %s: %w", args[0], err)
			}
			return a.showAccount(acct, raw)
		},
	}
}

// weightRange says which queue weights an account may have.
var weightRange = fmt.Sprintf("want a whole number from %d to %d", snapshot.MinQueueWeight, snapshot.MaxQueueWeight)

func balance(ac adminapi.Account) string {
	if ac.BalanceSEK != "" {
		return ac.BalanceSEK
	}
	return money.FormatSEK(ac.BalanceMicroSEK)
}

func (a *app) showAccount(ac adminapi.Account, raw []byte) error {
	if a.jsonOut {
		return a.printJSON(raw)
	}
	suspended := yesNo(ac.Suspended)
	if ac.Suspended && ac.SuspensionReason != "" {
		suspended += " (" + ac.SuspensionReason + ")"
	}
	value, source := effective(ac.EffectiveLimits)
	if err := a.details(
		"ID", ac.ID,
		"Customer", ac.Customer,
		"Residency", ac.Residency,
		"Suspended", suspended,
		"Balance", balance(ac)+" SEK",
		"Models", list(ac.Models),
		"Queue weight", itoa(int64(max(ac.QueueWeight, 1))),
		"Created", fmtTime(ac.CreatedAt),
	); err != nil {
		return err
	}
	if _, err := io.WriteString(a.out, "\n"); err != nil {
		return err
	}
	return a.table([]any{"Limits", "Own", "Effective", "From"}, [][]string{{"requests", ownLimits(ac.Limits), value, source}})
}

func (a *app) creditCmd() *cobra.Command {
	var note, ref string
	c := &cobra.Command{
		Use:   "credit ACCOUNT_ID AMOUNT_SEK [--note TEXT] [--reference REF]",
		Short: "Credit an account (exact decimal SEK, e.g. 500 or 99.50)",
		Long: `Credit an account with a positive, exact decimal amount of SEK (up to six decimals).
The ledger is append-only: every credit is a new entry. With --reference, a credit is applied
at most once per reference, so a retried command never credits twice.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			micro, err := money.ParseSEK(args[1])
			if err != nil {
				return fmt.Errorf("amount %q: want an exact decimal SEK amount such as 100 or 99.50: %w", args[1], err)
			}
			if micro <= 0 {
				return errors.New("amount must be positive")
			}
			cl, err := a.client()
			if err != nil {
				return err
			}
			cr, raw, err := cl.Credit(cmd.Context(), args[0], adminapi.CreditRequest{
				AmountSEK: money.FormatSEK(micro), Note: note, Reference: ref})
			if err != nil {
				return fmt.Errorf("credit %s: %w", args[0], err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			bal := cr.BalanceSEK
			if bal == "" {
				bal = money.FormatSEK(cr.BalanceMicroSEK)
			}
			if cr.Applied != nil && !*cr.Applied {
				_, err = fmt.Fprintf(a.out, "Reference %q was already credited (ledger entry %d); nothing added. Balance: %s SEK\n",
					ref, cr.EntryID, bal)
				return err
			}
			_, err = fmt.Fprintf(a.out, "Credited %s SEK to %s (ledger entry %d). Balance: %s SEK\n",
				money.FormatSEK(micro), clean(args[0]), cr.EntryID, bal)
			return err
		},
	}
	c.Flags().StringVar(&note, "note", "", "note stored with the ledger entry")
	c.Flags().StringVar(&ref, "reference", "", "idempotency reference: the same reference credits once")
	return c
}
