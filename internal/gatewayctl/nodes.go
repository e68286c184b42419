package gatewayctl

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func (a *app) nodesCmd() *cobra.Command {
	listCmd := &cobra.Command{
		Use:   "list",
		Short: "List data-plane nodes: region, the snapshot version each applied, when each was last seen, how long the oldest record in its usage spool had waited when it last said, and how it enforces limits (shared with the fleet, or its fallback share)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, raw, err := c.ListNodes(cmd.Context())
			if err != nil {
				return fmt.Errorf("list nodes: %w", err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			now := time.Now()
			rows := make([][]string, 0, len(l.Data))
			for _, n := range l.Data {
				ago := "-"
				if !n.LastSeen.IsZero() {
					ago = now.Sub(n.LastSeen).Round(time.Second).String() + " ago"
				}
				region := n.Region
				if region == "" {
					region = "-"
				}
				spool := "-" // never reported
				if n.SpoolReportedAt != nil {
					spool = (time.Duration(n.SpoolAgeMs) * time.Millisecond).Round(100 * time.Millisecond).String()
				}
				limitsMode := "-" // no fleet report lately
				if n.LimitsMode != nil {
					limitsMode = *n.LimitsMode
				}
				feed := "-"
				if n.StartFeed != nil {
					feed = *n.StartFeed
				}
				rows = append(rows, []string{n.NodeID, region, itoa(n.AppliedVersion), fmtTime(n.LastSeen), ago, spool, limitsMode, feed})
			}
			return a.table([]any{"Node", "Region", "Applied version", "Last seen", "Age", "Spool age", "Limits", "Start feed"}, rows)
		},
	}
	var limit int
	rejectedCmd := &cobra.Command{
		Use:   "rejected",
		Short: "List the latest usage records the control plane refused from nodes, with the reason",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, raw, err := c.ListRejected(cmd.Context(), limit)
			if err != nil {
				return fmt.Errorf("list rejected records: %w", err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			rows := make([][]string, 0, len(l.Data))
			for _, r := range l.Data {
				rows = append(rows, []string{fmtTime(r.ReceivedAt), r.NodeID, r.RequestID, r.AccountID, r.Reason})
			}
			if err := a.table([]any{"Received", "Node", "Request ID", "Account", "Reason"}, rows); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%d of %d refused records shown\n", len(l.Data), l.Total)
			return err
		},
	}
	rejectedCmd.Flags().IntVar(&limit, "limit", 20, "how many of the latest to show (1 to 1000)")
	return group("nodes", "Inspect data-plane nodes", listCmd, rejectedCmd)
}

func (a *app) snapshotCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "snapshot",
		Short: "Show the current snapshot's version and hash",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			s, raw, err := c.Snapshot(cmd.Context())
			if err != nil {
				return fmt.Errorf("snapshot: %w", err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			return a.details("Version", itoa(s.Version), "Hash", s.Hash, "Generated", fmtTime(s.GeneratedAt))
		},
	}
	c.AddCommand(a.keygenCmd())
	return c
}
