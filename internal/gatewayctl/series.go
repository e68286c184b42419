package gatewayctl

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/adminclient"
)

func (a *app) seriesCmd() *cobra.Command {
	var (
		model, route, node, account string
		last, step                  durationFlag
		from, to                    string
	)
	c := &cobra.Command{
		Use:   "series",
		Short: "Show the live service view: requests, errors, latency, tokens and spend over time",
		Long: `Show the per-minute series the control plane keeps from the usage it ingests, added up in
steps: requests and requests per second, errors and the error rate, time to first token
(streams) and duration percentiles in milliseconds, tokens in and out, and spend. For the
whole service, or one model, route (the route that answered), node (the node that sent the
records) or account. Percentiles are read from log-spaced buckets, within 9.05 % of the
true value. Steps without requests are left out of the table (not of --csv or --json);
the last row is the whole range.`,
		Example: `  gatewayctl series --last 24h
  gatewayctl series --model llama-3.1-8b-instruct --last 1h --step 5m
  gatewayctl series --node se-sto --from 2026-11-28T08:00:00Z --to 2026-11-28T12:00:00Z`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := seriesQuery(model, route, node, account, time.Duration(last), time.Duration(step), from, to)
			if err != nil {
				return err
			}
			cl, err := a.client()
			if err != nil {
				return err
			}
			s, raw, err := cl.Series(cmd.Context(), q)
			if err != nil {
				return fmt.Errorf("series: %w", err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			return a.printSeries(s)
		},
	}
	f := c.Flags()
	f.StringVar(&model, "model", "", "one model's series")
	f.StringVar(&route, "route", "", "one route's series (the route that answered)")
	f.StringVar(&node, "node", "", "one data-plane node's series")
	f.StringVar(&account, "account", "", "one account's series")
	f.Var(&last, "last", "the range up to now, such as 1h or 24h (default 1h)")
	f.StringVar(&from, "from", "", "start of the range, RFC 3339 (instead of --last)")
	f.StringVar(&to, "to", "", "end of the range, RFC 3339 (default now)")
	f.Var(&step, "step", "width of each row, whole minutes such as 1m, 15m, 1h (default: at most 360 rows)")
	return c
}

// seriesQuery builds the API query from the flags: at most one of the dimension flags,
// and --last or --from.
func seriesQuery(model, route, node, account string, last, step time.Duration, from, to string) (adminclient.SeriesQuery, error) {
	q := adminclient.SeriesQuery{Dimension: adminapi.SeriesAll, From: from, To: to}
	n := 0
	for _, d := range []struct{ dim, key string }{{adminapi.SeriesModel, model}, {adminapi.SeriesRoute, route},
		{adminapi.SeriesNode, node}, {adminapi.SeriesAccount, account}} {
		if d.key != "" {
			q.Dimension, q.Key = d.dim, d.key
			n++
		}
	}
	switch {
	case n > 1:
		return q, errors.New("give at most one of --model, --route, --node and --account")
	case last != 0 && from != "":
		return q, errors.New("give --last or --from, not both")
	case last < 0:
		return q, errors.New("--last must be positive")
	}
	if last > 0 {
		end := time.Now().UTC()
		if to != "" {
			t, err := time.Parse(time.RFC3339, to)
			if err != nil {
				return q, errors.New("--to must be an RFC 3339 time such as 2026-11-28T09:00:00Z")
			}
			end = t
		}
		q.From = end.Add(-last).Format(time.RFC3339)
	}
	if step != 0 {
		q.Step = step.String()
	}
	return q, nil
}

func (a *app) printSeries(s adminapi.Series) error {
	out := make([][]string, 0, len(s.Points)+1)
	row := func(when string, p adminapi.SeriesPoint) []string {
		rate := "-"
		if p.ErrorRate != nil {
			rate = strconv.FormatFloat(*p.ErrorRate*100, 'f', 1, 64)
		}
		return []string{when, itoa(p.Requests), strconv.FormatFloat(p.RequestsPerSecond, 'f', 2, 64), itoa(p.Errors), rate,
			ms(p.TTFTMS.P50), ms(p.TTFTMS.P90), ms(p.TTFTMS.P99), ms(p.DurationMS.P50), ms(p.DurationMS.P99),
			itoa(p.PromptTokens), itoa(p.CompletionTokens), p.PriceSEK}
	}
	empty := 0
	for _, p := range s.Points {
		if p.Requests == 0 && !a.csvOut { // a table shows the steps with traffic
			empty++
			continue
		}
		out = append(out, row(p.T.UTC().Format("2006-01-02 15:04"), p))
	}
	if !a.csvOut {
		out = append(out, row("total", s.Total))
	}
	if err := a.rows([]string{"Time (UTC)", "Requests", "Req/s", "Errors", "Error %", "TTFT p50", "TTFT p90", "TTFT p99",
		"Duration p50", "Duration p99", "Tokens in", "Tokens out", "SEK"}, out); err != nil {
		return err
	}
	if a.csvOut {
		return nil
	}
	what := "the whole service"
	if s.Key != "" {
		what = s.Dimension + " " + clean(s.Key)
	}
	_, err := fmt.Fprintf(a.out, "%s from %s to %s, %d s steps (%d without requests left out); times in ms, percentiles within %.2f %%\n",
		what, s.From.UTC().Format("2006-01-02 15:04"), s.To.UTC().Format("2006-01-02 15:04"), s.StepSeconds, empty, s.PercentileError*100)
	return err
}

// ms prints a percentile in milliseconds, "-" when none was measured.
func ms(v *float64) string {
	if v == nil {
		return "-"
	}
	if *v < 10 {
		return strconv.FormatFloat(*v, 'f', 1, 64)
	}
	return strconv.FormatFloat(*v, 'f', 0, 64)
}
