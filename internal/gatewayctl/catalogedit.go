package gatewayctl

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

// loadResets is what every single-edit command says about a later catalogue load.
const loadResets = `A later "catalog load" sets this from its file again: the file is the truth, and a route
the file lists without a state is enabled.`

// setPricesCmd is models set-prices ID [--input N] [--output N].
func (a *app) setPricesCmd() *cobra.Command {
	var in, out int64
	c := &cobra.Command{
		Use:   "set-prices MODEL_ID [--input N] [--output N]",
		Short: "Change a model's prices in öre per million tokens",
		Long:  "Change a model's input and/or output price (öre per million tokens, whole numbers, 0 or more)\nwithout loading the catalogue. Nodes get a new snapshot; the change is audited.\n" + loadResets,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var req adminapi.PatchModelRequest
			for _, f := range []struct {
				name string
				v    int64
				dst  **int64
			}{{"input", in, &req.InputOrePerMillion}, {"output", out, &req.OutputOrePerMillion}} {
				if !cmd.Flags().Changed(f.name) {
					continue
				}
				if f.v < 0 {
					return fmt.Errorf("--%s %d: want a whole number of öre, 0 or more", f.name, f.v)
				}
				v := f.v
				*f.dst = &v
			}
			if req.InputOrePerMillion == nil && req.OutputOrePerMillion == nil {
				return fmt.Errorf("give --input, --output or both")
			}
			cl, err := a.client()
			if err != nil {
				return err
			}
			m, raw, err := cl.PatchModel(cmd.Context(), args[0], req)
			if err != nil {
				return fmt.Errorf("set prices of %s: %w", args[0], err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			return a.table([]any{"ID", "Input öre/M", "Output öre/M", "Routes"},
				[][]string{{m.ID, itoa(m.InputOrePerMillion), itoa(m.OutputOrePerMillion), strconv.Itoa(len(m.Routes))}})
		},
	}
	c.Flags().Int64Var(&in, "input", 0, "input price, öre per million tokens")
	c.Flags().Int64Var(&out, "output", 0, "output price, öre per million tokens")
	return c
}

// routeEditCmds are routes set-weight, set-priority, enable, disable and drain.
func (a *app) routeEditCmds() []*cobra.Command {
	number := func(use, short, field string, least int, set func(*adminapi.PatchRouteRequest, int)) *cobra.Command {
		return a.routePatch(use, short, 2, func(args []string) (adminapi.PatchRouteRequest, error) {
			n, err := strconv.Atoi(args[1])
			if err != nil || n < least {
				return adminapi.PatchRouteRequest{}, fmt.Errorf("%s %q: want a whole number of at least %d", field, args[1], least)
			}
			var req adminapi.PatchRouteRequest
			set(&req, n)
			return req, nil
		})
	}
	state := func(verb, st, short string) *cobra.Command {
		return a.routePatch(verb+" ROUTE_ID", short, 1, func([]string) (adminapi.PatchRouteRequest, error) {
			return adminapi.PatchRouteRequest{State: &st}, nil
		})
	}
	return []*cobra.Command{
		number("set-weight ROUTE_ID N", "Set a route's weight (its share among routes of equal priority, 1 or more)", "weight", 1,
			func(r *adminapi.PatchRouteRequest, n int) { r.Weight = &n }),
		number("set-priority ROUTE_ID N", "Set a route's priority (lower is preferred)", "priority", -1<<31,
			func(r *adminapi.PatchRouteRequest, n int) { r.Priority = &n }),
		state("enable", snapshot.RouteEnabled, "Let nodes send a route requests again"),
		state("disable", snapshot.RouteDisabled, "Stop using a route: nodes send it no requests"),
		state("drain", snapshot.RouteDraining, "Drain a route: no new requests, those in flight finish"),
	}
}

// routePatch is a command that patches the route its first argument names with what
// build makes of its arguments, and prints the route.
func (a *app) routePatch(use, short string, nargs int, build func([]string) (adminapi.PatchRouteRequest, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  short + ". Nodes get a new snapshot; the change is audited.\n" + loadResets,
		Args:  cobra.ExactArgs(nargs),
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := build(args)
			if err != nil {
				return err
			}
			cl, err := a.client()
			if err != nil {
				return err
			}
			r, raw, err := cl.PatchRoute(cmd.Context(), args[0], req)
			if err != nil {
				return fmt.Errorf("change route %s: %w", args[0], err)
			}
			if a.jsonOut {
				return a.printJSON(raw)
			}
			return a.table([]any{"ID", "Model", "Priority", "Weight", "State"},
				[][]string{{r.ID, r.Model, strconv.Itoa(r.Priority), strconv.Itoa(r.Weight), r.State}})
		},
	}
}
