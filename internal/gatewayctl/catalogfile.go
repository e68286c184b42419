package gatewayctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/sekgate/gateway/controlplane/catalog"
)

func (a *app) catalogCmd() *cobra.Command {
	return group("catalog", "Load and export model catalogues", a.catalogLoadCmd(), a.catalogExportCmd())
}

func (a *app) catalogLoadCmd() *cobra.Command {
	var dryRun, strict bool
	load := &cobra.Command{
		Use:   "load FILE.yaml",
		Short: "Create or replace the models and routes of a catalogue file (- reads stdin)",
		Long: `Load a catalogue file (YAML, or JSON) into the control plane. Models and routes in the
file are created or replaced; routes of those models that the file no longer lists are
removed. Models not in the file are left alone. The file is the truth: prices, weights,
priorities and route states changed since (models set-prices, routes set-weight, disable,
drain) are set from the file again, and a route it lists without a state is enabled.
The file is checked before anything is
sent: an unknown field (with the closest known one suggested), a wrong type or an invalid
value is refused with its line and column, e.g.

  gatewayctl: catalog.yaml:14:5: models[0]: unknown field "input_ore_per_milion_tokens" in model; did you mean "input_ore_per_million_tokens"?

Warnings (what would keep nodes from using a route) are printed; with --strict they fail
the command (exit 1), for CI.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := readCatalogue(cmd, args[0])
			if err != nil {
				return err
			}
			body, n, err := CatalogJSON(args[0], src)
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			res, raw, err := c.PutCatalog(cmd.Context(), body, dryRun)
			if err != nil {
				return fmt.Errorf("load catalogue %s (%d models): %w", args[0], n, err)
			}
			if a.jsonOut {
				err = a.printJSON(raw)
			} else {
				err = a.loadReport(args[0], dryRun, res.Models, res.Routes, res.Warnings)
			}
			if err == nil && strict && len(res.Warnings) > 0 {
				err = fmt.Errorf("catalogue %s: %d warnings, refused by --strict", args[0], len(res.Warnings))
			}
			return err
		},
	}
	load.Flags().BoolVar(&dryRun, "dry-run", false, "check the file and show warnings without loading it (not audited)")
	load.Flags().BoolVar(&strict, "strict", false, "exit 1 when the load has warnings (with --dry-run: nothing is loaded either way)")
	return load
}

// loadReport prints what a load did and its warnings.
func (a *app) loadReport(name string, dryRun bool, models, routes int, warnings []string) error {
	verb := "Loaded"
	if dryRun {
		verb = "Checked (nothing loaded)"
	}
	if _, err := fmt.Fprintf(a.out, "%s catalogue %s: %d models, %d routes\n", verb, clean(name), models, routes); err != nil {
		return err
	}
	for _, w := range warnings {
		if _, err := fmt.Fprintf(a.out, "warning: %s\n", clean(w)); err != nil {
			return err
		}
	}
	return nil
}

func readCatalogue(cmd *cobra.Command, name string) ([]byte, error) {
	var src []byte
	var err error
	if name == "-" {
		src, err = io.ReadAll(cmd.InOrStdin())
	} else {
		src, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("read catalogue: %w", err)
	}
	return src, nil
}

func (a *app) catalogExportCmd() *cobra.Command {
	var format string
	export := &cobra.Command{
		Use:   "export",
		Short: "Write the current catalogue in the shape catalog load takes",
		Long: `Write every model and route of the control plane's catalogue to standard output, as YAML
(the default) or JSON, in the shape catalog load takes: an export loads back unchanged.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var f catalog.Format
			switch format {
			case "yaml":
				f = catalog.FormatYAML
			case "json":
				f = catalog.FormatJSON
			default:
				return fmt.Errorf("--format %q: want yaml or json", format)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			cat, _, err := c.GetCatalog(cmd.Context())
			if err != nil {
				return fmt.Errorf("export catalogue: %w", err)
			}
			b, err := cat.Export(f)
			if err != nil {
				return fmt.Errorf("export catalogue: %w", err)
			}
			_, err = a.out.Write(b)
			return err
		},
	}
	export.Flags().StringVar(&format, "format", "yaml", "yaml or json")
	return export
}

// CatalogJSON checks a YAML or JSON catalogue (name is the file's, for messages) as the
// control plane would, and returns it as JSON for PUT /admin/v1/catalog with the number
// of models in it. A problem is an error placed in the file: "name:line:column: ...".
func CatalogJSON(name string, src []byte) (json.RawMessage, int, error) {
	if name == "-" {
		name = "stdin"
	}
	c, _, err := catalog.Load(src)
	if err != nil {
		var ce *catalog.Error
		if errors.As(err, &ce) {
			placed := *ce
			placed.File = name
			return nil, 0, &placed
		}
		return nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	if len(c.Models) == 0 {
		return nil, 0, fmt.Errorf("%s: no models: want a top-level \"models\" list", name)
	}
	out, err := json.Marshal(c)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: encode as JSON: %w", name, err)
	}
	return out, len(c.Models), nil
}
