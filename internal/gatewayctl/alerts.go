package gatewayctl

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

func (a *app) alertsCmd() *cobra.Command {
	var req adminapi.CreateAlertRuleRequest
	var threshold string
	create := &cobra.Command{
		Use:   "create --name NAME --kind KIND --webhook-url URL [--threshold VALUE] [--account ACCOUNT_ID]",
		Short: "Create an alert rule (prints its webhook signing secret, this once)",
		Long: `Create an alert rule. Kinds and their --threshold:
  balance_below      an account's balance below VALUE SEK (e.g. 50 or 12.50)
  budget_used_above  a budget's period spend at VALUE percent or more (e.g. 80)
  route_problem      a node reports a route's breaker open or a health problem (no threshold)
  spool_age_above    a node's oldest unsent usage older than VALUE (e.g. 5m)
  node_silent        a node not heard from for more than VALUE (e.g. 2m)
--account narrows balance and budget rules to one account.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if req.Threshold, err = alertThreshold(req.Kind, threshold); err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			rule, raw, err := c.CreateAlertRule(cmd.Context(), req)
			if err != nil {
				return fmt.Errorf("create alert rule: %w", err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			if err := a.alertRulesTable([]adminapi.AlertRule{rule}); err != nil {
				return err
			}
			_, err = fmt.Fprintf(a.out, "Webhook signing secret (shown once): %s\n", clean(rule.Secret))
			return err
		},
	}
	create.Flags().StringVar(&req.Name, "name", "", "what the rule is called in events and listings (required)")
	create.Flags().StringVar(&req.Kind, "kind", "", "balance_below, budget_used_above, route_problem, spool_age_above or node_silent (required)")
	create.Flags().StringVar(&req.WebhookURL, "webhook-url", "", "http or https URL that receives the events (required)")
	create.Flags().StringVar(&req.AccountID, "account", "", "balance and budget rules: only this account")
	create.Flags().StringVar(&threshold, "threshold", "", "SEK, percent or duration, by kind (see above)")

	list := &cobra.Command{
		Use: "list", Short: "List alert rules and how many subjects each fires for", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, raw, err := c.ListAlertRules(cmd.Context())
			if err != nil {
				return fmt.Errorf("list alert rules: %w", err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			return a.alertRulesTable(l.Data)
		},
	}
	return group("alerts", "Alert rules and their webhook deliveries", create, list,
		a.alertSwitchCmd("enable", true), a.alertSwitchCmd("disable", false), a.alertDeleteCmd(), a.alertDeliveriesCmd())
}

// alertThreshold reads --threshold for kind into the API's unit.
func alertThreshold(kind, v string) (int64, error) {
	n, err := adminapi.ParseAlertThreshold(kind, v)
	if err != nil && !adminapi.ValidAlertKind(kind) {
		return 0, fmt.Errorf("--kind %q: want balance_below, budget_used_above, route_problem, spool_age_above or node_silent", kind)
	}
	if err != nil {
		return 0, fmt.Errorf("--threshold %q: %w", v, err)
	}
	return n, nil
}

func (a *app) alertRulesTable(rules []adminapi.AlertRule) error {
	rows := make([][]string, 0, len(rules))
	for _, r := range rules {
		state := "on"
		if !r.Enabled {
			state = "off"
		}
		rows = append(rows, []string{r.ID, r.Name, r.Kind, r.ThresholdText(), orDash(r.AccountID), r.WebhookURL, state, strconv.Itoa(r.Firing)})
	}
	return a.table([]any{"ID", "Name", "Kind", "Threshold", "Account", "Webhook", "State", "Firing"}, rows)
}

func (a *app) alertSwitchCmd(use string, on bool) *cobra.Command {
	return &cobra.Command{
		Use: use + " RULE_ID", Short: strings.ToUpper(use[:1]) + use[1:] + " an alert rule", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			r, raw, err := c.SetAlertRuleEnabled(cmd.Context(), args[0], on)
			if err != nil {
				return fmt.Errorf("%s alert rule %s: %w", use, args[0], err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			return a.alertRulesTable([]adminapi.AlertRule{r})
		},
	}
}

func (a *app) alertDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use: "delete RULE_ID", Short: "Delete an alert rule and its deliveries", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			r, raw, err := c.DeleteAlertRule(cmd.Context(), args[0])
			if err != nil {
				return fmt.Errorf("delete alert rule %s: %w", args[0], err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			_, err = fmt.Fprintf(a.out, "Deleted alert rule %s (%s)\n", clean(r.ID), clean(r.Name))
			return err
		},
	}
}

func (a *app) alertDeliveriesCmd() *cobra.Command {
	var rule string
	var limit int
	cmd := &cobra.Command{
		Use: "deliveries [--rule RULE_ID] [--limit N]", Short: "Recent alert events and how their webhook deliveries went", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, raw, err := c.ListAlertDeliveries(cmd.Context(), rule, limit)
			if err != nil {
				return fmt.Errorf("list alert deliveries: %w", err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			rows := make([][]string, 0, len(l.Data))
			for _, d := range l.Data {
				status := d.State
				if d.LastStatus != 0 {
					status += fmt.Sprintf(" (%d)", d.LastStatus)
				}
				rows = append(rows, []string{strconv.FormatInt(d.ID, 10), fmtTime(d.CreatedAt), d.RuleName, d.Event, d.Subject,
					status, strconv.Itoa(d.Attempts), fmtTimePtr(d.NextAttemptAt), orDash(d.LastError)})
			}
			return a.table([]any{"ID", "Created", "Rule", "Event", "Subject", "State", "Attempts", "Next attempt", "Last error"}, rows)
		},
	}
	cmd.Flags().StringVar(&rule, "rule", "", "only this rule's deliveries")
	cmd.Flags().IntVar(&limit, "limit", 50, "how many, 1 to 1000")
	return cmd
}
