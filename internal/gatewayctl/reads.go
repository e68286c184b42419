package gatewayctl

import (
	"encoding/csv"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sekgate/gateway/controlplane/adminclient"
	"github.com/sekgate/gateway/internal/csvsafe"
	"github.com/sekgate/gateway/shared/money"
)

// rows prints rows under header as a table, or as CSV with --csv (RFC 4180, a header line,
// full precision, cells a spreadsheet would run as a formula defused: internal/csvsafe).
func (a *app) rows(header []string, rows [][]string) error {
	if !a.csvOut {
		h := make([]any, len(header))
		for i, s := range header {
			h[i] = s
		}
		return a.table(h, rows)
	}
	w := csv.NewWriter(a.out)
	if err := w.Write(header); err != nil {
		return err
	}
	for _, r := range rows {
		safe := make([]string, len(r))
		for i, c := range r {
			safe[i] = csvsafe.Cell(c)
		}
		if err := w.Write(safe); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}

func (a *app) recordsCmd() *cobra.Command {
	var q adminclient.RecordQuery
	var since time.Duration
	c := &cobra.Command{
		Use:   "records",
		Short: "List request records of any account, newest first, with filters",
		Long: `List request records (execution metadata, never content) of every account, newest first.
Filters combine; --since is a shorthand for --from now minus the duration. Results are
ok, cancelled, incomplete, interrupted, timeout, upstream_error, rejected and no_route.
With --csv the page is written as CSV for a spreadsheet; --json prints the API's answer.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since > 0 {
				q.From = time.Now().Add(-since).UTC().Format(time.RFC3339)
			}
			cl, err := a.client()
			if err != nil {
				return err
			}
			p, raw, err := cl.ListRecords(cmd.Context(), q)
			if err != nil {
				return fmt.Errorf("list records: %w", err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			out := make([][]string, 0, len(p.Data))
			var total int64
			for _, r := range p.Data {
				key := "test box"
				if r.KeyID != nil {
					key = *r.KeyID
				}
				total += r.PriceMicroSEK
				out = append(out, []string{r.TS.UTC().Format(time.RFC3339), r.RequestID, r.AccountID, key, r.Model, r.Endpoint,
					itoa(int64(r.Status)), r.Result, itoa(r.PromptTokens), itoa(r.CompletionTokens), money.FormatSEK(r.PriceMicroSEK), itoa(r.DurationMS)})
			}
			if err := a.rows([]string{"Time (UTC)", "Request", "Account", "Key", "Model", "Endpoint", "Status", "Result",
				"Prompt", "Output", "Price SEK", "ms"}, out); err != nil {
				return err
			}
			if a.csvOut {
				return nil
			}
			_, err = fmt.Fprintf(a.out, "%d records, %s SEK\n", len(p.Data), money.FormatSEK(total))
			if err == nil && p.NextCursor != "" {
				_, err = fmt.Fprintf(a.out, "older records: --after %s\n", p.NextCursor)
			}
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&q.AccountID, "account", "", "only this account's records")
	f.StringVar(&q.KeyID, "key", "", `only this key's records ("none": the console's test box)`)
	f.StringVar(&q.Model, "model", "", "only this model's records")
	f.StringVar(&q.Result, "result", "", "only records with this result, e.g. upstream_error")
	f.BoolVar(&q.Underreported, "underreported", false, "only records whose provider reported less output than it delivered")
	f.StringVar(&q.From, "from", "", "only records at or after this RFC 3339 time")
	f.StringVar(&q.To, "to", "", "only records before this RFC 3339 time")
	f.Var((*durationFlag)(&since), "since", "only records of the last duration, e.g. 1h or 30m (instead of --from)")
	f.StringVar(&q.After, "after", "", "continue a listing (the cursor a previous page printed)")
	f.IntVar(&q.Limit, "limit", 50, "how many records (1 to 1000)")
	c.MarkFlagsMutuallyExclusive("since", "from")
	return c
}

func (a *app) usageCmd() *cobra.Command {
	var days int
	c := &cobra.Command{
		Use:   "usage ACCOUNT_ID",
		Short: "Show an account's usage per day and model, and the period's total",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client()
			if err != nil {
				return err
			}
			u, raw, err := cl.Usage(cmd.Context(), args[0], days)
			if err != nil {
				return fmt.Errorf("usage of %s: %w", clean(args[0]), err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			out := make([][]string, 0, len(u.Data))
			for _, d := range u.Data {
				out = append(out, []string{d.Day, d.Model, itoa(d.Requests), itoa(d.PromptTokens), itoa(d.CompletionTokens), d.PriceSEK})
			}
			if err := a.rows([]string{"Day (UTC)", "Model", "Requests", "Prompt tokens", "Output tokens", "Price SEK"}, out); err != nil {
				return err
			}
			if a.csvOut {
				return nil
			}
			_, err = fmt.Fprintf(a.out, "last %d days: %s SEK\n", u.Days, u.PriceSEK)
			return err
		},
	}
	c.Flags().IntVar(&days, "days", 0, "how many days back, 1 to 366 (default: the server's, 30)")
	return c
}

func (a *app) ledgerCmd() *cobra.Command {
	var before int64
	var limit int
	c := &cobra.Command{
		Use:   "ledger ACCOUNT_ID",
		Short: "Show an account's ledger, newest first: credits, top-ups, usage debits, refunds, adjustments",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client()
			if err != nil {
				return err
			}
			p, raw, err := cl.Ledger(cmd.Context(), args[0], before, limit)
			if err != nil {
				return fmt.Errorf("ledger of %s: %w", clean(args[0]), err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			out := make([][]string, 0, len(p.Data))
			for _, e := range p.Data {
				out = append(out, []string{itoa(e.ID), e.CreatedAt.UTC().Format(time.RFC3339), e.Kind, e.AmountSEK, dash(e.Reference), strings.TrimSpace(e.Note)})
			}
			if err := a.rows([]string{"ID", "Time (UTC)", "Kind", "Amount SEK", "Reference", "Note"}, out); err != nil {
				return err
			}
			if a.csvOut || p.NextBefore == nil {
				return nil
			}
			_, err = fmt.Fprintf(a.out, "older entries: --before %d\n", *p.NextBefore)
			return err
		},
	}
	c.Flags().Int64Var(&before, "before", 0, "only entries older than this ID (to page back)")
	c.Flags().IntVar(&limit, "limit", 50, "how many entries (1 to 1000)")
	return c
}

func (a *app) refusalsCmd() *cobra.Command {
	var days int
	c := &cobra.Command{
		Use:   "refusals ACCOUNT_ID",
		Short: "Show an account's requests refused before routing (402, 403, 429, …), which make no records",
		Long: `Show, per UTC day, key, status and error code, the requests of an account that data-plane
nodes refused after authenticating them and before routing them: a balance exhausted (402
insufficient_quota), a suspended account or residency (403), a rate or concurrency limit
(429), a body too large (413), an unknown model (404). They never become request records,
so this is where "why does my customer get 402?" is answered. Nodes report every 10 s.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client()
			if err != nil {
				return err
			}
			rep, raw, err := cl.Refusals(cmd.Context(), args[0], days)
			if err != nil {
				return fmt.Errorf("refusals of %s: %w", clean(args[0]), err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			out := make([][]string, 0, len(rep.Data))
			for _, r := range rep.Data {
				out = append(out, []string{r.Day, dash(r.KeyID), itoa(int64(r.Status)), dash(r.Code), itoa(r.Count)})
			}
			if err := a.rows([]string{"Day (UTC)", "Key", "Status", "Code", "Count"}, out); err != nil {
				return err
			}
			if a.csvOut {
				return nil
			}
			_, err = fmt.Fprintf(a.out, "last %d days: %d refused\n", rep.Days, rep.Total)
			return err
		},
	}
	c.Flags().IntVar(&days, "days", 0, "how many days back, 1 to 366 (default: the server's, 7)")
	return c
}
