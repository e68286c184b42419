package gatewayctl

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

func (a *app) modelsCmd() *cobra.Command {
	var allowOutside bool
	enable := &cobra.Command{
		Use:   "enable ACCOUNT_ID MODEL...",
		Short: "Let an account use models (canonical IDs or aliases)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			raw, err := c.EnableModels(cmd.Context(), args[0], args[1:], allowOutside)
			if err != nil {
				return fmt.Errorf("enable models for %s: %w", args[0], err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			_, err = fmt.Fprintf(a.out, "Enabled for %s: %s\n", clean(args[0]), clean(strings.Join(args[1:], ", ")))
			return err
		},
	}
	enable.Flags().BoolVar(&allowOutside, "allow-outside-residency", false,
		"enable even a model that no route in the account's residency serves (otherwise refused)")
	disable := &cobra.Command{
		Use:   "disable ACCOUNT_ID MODEL",
		Short: "Take a model away from an account",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			raw, err := c.DisableModel(cmd.Context(), args[0], args[1])
			if err != nil {
				return fmt.Errorf("disable %s for %s: %w", args[1], args[0], err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			_, err = fmt.Fprintf(a.out, "Disabled for %s: %s\n", clean(args[0]), clean(args[1]))
			return err
		},
	}
	listCmd := &cobra.Command{
		Use:   "list",
		Short: "List the model catalogue with prices and route counts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, raw, err := c.ListModels(cmd.Context())
			if err != nil {
				return fmt.Errorf("list models: %w", err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			rows := make([][]string, 0, len(l.Data))
			for _, m := range l.Data {
				ctx := "-"
				if m.ContextTokens > 0 {
					ctx = itoa(m.ContextTokens)
				}
				rows = append(rows, []string{m.ID, list(m.Aliases), m.Endpoint, ctx,
					itoa(m.InputOrePerMillion), itoa(m.OutputOrePerMillion), strconv.Itoa(len(m.Routes))})
			}
			return a.table([]any{"ID", "Aliases", "Endpoint", "Context", "Input öre/M", "Output öre/M", "Routes"}, rows)
		},
	}
	return group("models", "Enable or disable models for accounts; list the catalogue; set a model's prices",
		enable, disable, listCmd, a.setPricesCmd())
}

func (a *app) routesCmd() *cobra.Command {
	listCmd := &cobra.Command{
		Use:   "list",
		Short: "List every route",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, raw, err := c.ListRoutes(cmd.Context())
			if err != nil {
				return fmt.Errorf("list routes: %w", err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			rows := make([][]string, 0, len(l.Data))
			for _, r := range l.Data {
				base := r.BaseURL
				if r.Discovery != "" {
					base += " (" + r.Discovery + ")"
				}
				rows = append(rows, []string{r.ID, r.Model, r.Provider, r.Region, r.Country,
					strconv.Itoa(r.Priority), strconv.Itoa(r.Weight), list(r.Protocols), yesNo(r.Translate),
					yesNo(r.AllowRemoteMedia), list(r.AllowExtensions), base, r.StateName(), health(r.Problems)})
				rows = append(rows, replicaRows(r.Replicas)...)
			}
			return a.table([]any{"ID", "Model", "Provider", "Region", "Country", "Priority", "Weight", "Protocols", "Translate",
				"Remote media", "Extensions", "Base URL", "State", "Health"}, rows)
		},
	}
	subs := append([]*cobra.Command{listCmd, a.probeCmd()}, a.routeEditCmds()...)
	return group("routes", "Inspect routes; probe a route's server; set a route's weight, priority and state", subs...)
}

func (a *app) probeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "probe ROUTE_ID",
		Short: "Send a few tiny requests straight to a route's server and report its dialect",
		Long: `Probe a route's server directly (not through the gateway): its model list and context window,
a chat answer whole and streamed (with and without include_usage), a tool call, and a prompt
over the window. It prints the server it looks like (vllm, sglang, llamacpp, tgi, ollama,
openai) and how it reports usage, reasoning and errors, and warns where the catalogue
disagrees (server, model name, context_tokens, protocols). The route's credential is read
from the environment variable its credentials_ref names.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, _, err := c.ListRoutes(cmd.Context())
			if err != nil {
				return fmt.Errorf("list routes: %w", err)
			}
			i := slices.IndexFunc(l.Data, func(r adminapi.ListedRoute) bool { return r.ID == args[0] })
			if i < 0 {
				return fmt.Errorf("no route %q", args[0])
			}
			r := l.Data[i].Route
			var window int64
			if ms, _, err := c.ListModels(cmd.Context()); err == nil {
				for _, m := range ms.Data {
					if m.ID == r.Model {
						window = m.ContextTokens
					}
				}
			}
			env, err := snapshot.ParseCredentialsRef(r.CredentialsRef)
			if err != nil {
				return err
			}
			token := ""
			if env != "" {
				if token = a.getenv(env); token == "" {
					fmt.Fprintf(a.errOut, "gatewayctl: %s is not set: probing without a credential\n", env)
				}
			}
			p, err := ProbeRoute(cmd.Context(), &http.Client{Timeout: probeTimeout}, r, token, window)
			if err != nil {
				return err
			}
			if a.jsonOut {
				b, _ := json.Marshal(p)
				return a.printJSON(b)
			}
			if err := a.details(probeLines(p)...); err != nil {
				return err
			}
			for _, w := range p.Warnings {
				fmt.Fprintln(a.out, "warning:", clean(w))
			}
			return nil
		},
	}
}

// health is a route's health across nodes: "ok", or node: problem pairs, sorted.
// replicaRows are the rows of a discovered route's replicas that nodes report on, under
// its own: the replica's ID, its address as base URL, and each node's breaker and problem.
func replicaRows(reps []adminapi.ListedReplica) [][]string {
	rows := make([][]string, 0, len(reps))
	for _, rep := range reps {
		states := make(map[string]string, len(rep.Breakers)+len(rep.Problems))
		for node, st := range rep.Breakers {
			states[node] = "breaker " + st
		}
		for node, p := range rep.Problems {
			if states[node] != "" {
				p = states[node] + ", " + p
			}
			states[node] = p
		}
		rows = append(rows, []string{"  " + rep.ID, "", "", "", "", "", "", "", "", "", "", rep.Address, "", health(states)})
	}
	return rows
}

func health(problems map[string]string) string {
	if len(problems) == 0 {
		return "ok"
	}
	parts := make([]string, 0, len(problems))
	for node, p := range problems {
		parts = append(parts, node+": "+p)
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
