package gatewayctl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/money"
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
	v = strings.TrimSpace(v)
	switch kind {
	case "balance_below":
		micro, err := money.ParseSEK(v)
		if err != nil || micro < 0 {
			return 0, fmt.Errorf("--threshold %q: a balance_below rule takes an amount of SEK such as 50 or 12.50", v)
		}
		return micro, nil
	case "budget_used_above":
		n, err := strconv.ParseInt(strings.TrimSuffix(v, "%"), 10, 64)
		if err != nil || n < 1 || n > 1000 {
			return 0, fmt.Errorf("--threshold %q: a budget_used_above rule takes a percentage, 1 to 1000, such as 80", v)
		}
		return n, nil
	case "spool_age_above", "node_silent":
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return 0, fmt.Errorf("--threshold %q: a %s rule takes a duration of at least 1s, such as 5m or 90s", v, kind)
		}
		return d.Milliseconds(), nil
	case "route_problem":
		if v != "" {
			return 0, errors.New("--threshold: a route_problem rule takes none")
		}
		return 0, nil
	}
	return 0, fmt.Errorf("--kind %q: want balance_below, budget_used_above, route_problem, spool_age_above or node_silent", kind)
}

// thresholdText is a rule's threshold in the unit of its kind.
func thresholdText(r adminapi.AlertRule) string {
	switch r.Kind {
	case "balance_below":
		return money.FormatSEK(r.Threshold) + " SEK"
	case "budget_used_above":
		return strconv.FormatInt(r.Threshold, 10) + "%"
	case "spool_age_above", "node_silent":
		return (time.Duration(r.Threshold) * time.Millisecond).String()
	}
	return "-"
}

func (a *app) alertRulesTable(rules []adminapi.AlertRule) error {
	rows := make([][]string, 0, len(rules))
	for _, r := range rules {
		state := "on"
		if !r.Enabled {
			state = "off"
		}
		rows = append(rows, []string{r.ID, r.Name, r.Kind, thresholdText(r), orDash(r.AccountID), r.WebhookURL, state, strconv.Itoa(r.Firing)})
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
