package flagenvtest

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/sekgate/gateway/internal/flagenv"
)

// recorder is a TB that keeps the reports instead of failing.
type recorder struct {
	*testing.T
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// fake is a command with a listen address, a token, a DSN and whatever extra adds.
func fake(extra func(fs *flag.FlagSet)) Command {
	build := func() *flag.FlagSet {
		fs := flag.NewFlagSet("fake", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.String("listen", "127.0.0.1:1", "address")
		fs.Var(new(flagenv.Secret), "api-token", "bearer token of the API")
		fs.Var(new(flagenv.DSN), "database-url", "Postgres URL")
		fs.String("api-token-file", "", "file holding the API token")
		fs.String("peer-listen", "", "where peers connect with --api-token")
		fs.Int("retries", 3, "retries")
		fs.Bool("insecure", false, "send tokens in clear")
		if extra != nil {
			extra(fs)
		}
		return fs
	}
	return Command{Prefix: "FAKE_", FlagSet: build,
		Parse: func(w io.Writer, args []string, lookup func(string) (string, bool)) error {
			return flagenv.ParseTo(w, build(), args, "FAKE_", lookup)
		},
		Secrets:    []string{"api-token", "database-url"},
		NotSecrets: map[string]string{"peer-listen": "an address"}}
}

func TestCheckPrintConfig(t *testing.T) {
	tests := []struct {
		name   string
		cmd    func() Command
		report string // "" when the command passes
	}{
		{"typed secrets pass", func() Command { return fake(nil) }, ""},
		{"a plain secret", func() Command {
			return fake(func(fs *flag.FlagSet) { fs.String("webhook-secret", "", "signing secret of the webhooks") })
		}, "--webhook-secret mentions a credential"},
		{"a plain secret named by its help only", func() Command {
			return fake(func(fs *flag.FlagSet) { fs.String("upstream-auth", "", "sent as the Authorization header") })
		}, "--upstream-auth mentions a credential"},
		{"a plain DSN", func() Command {
			return fake(func(fs *flag.FlagSet) { fs.String("replica-url", "", "Postgres URL of the replica") })
		}, "--replica-url mentions a credential"},
		{"a secret left off the list", func() Command {
			return fake(func(fs *flag.FlagSet) { fs.Var(new(flagenv.Secret), "stripe-key", "payment key") })
		}, "--stripe-key is a *flagenv.Secret but not in the list"},
		{"a listed secret that is plain", func() Command {
			c := fake(func(fs *flag.FlagSet) { fs.String("region", "", "where") })
			c.Secrets = append(c.Secrets, "region")
			return c
		}, "--region is listed as a secret but is a plain"},
		{"a stale list", func() Command { c := fake(nil); c.Secrets = append(c.Secrets, "old-token"); return c }, "--old-token is listed but is no setting"},
		{"a parse that ignores the environment", func() Command {
			c := fake(nil)
			parse := c.Parse
			c.Parse = func(w io.Writer, args []string, _ func(string) (string, bool)) error {
				return parse(w, args, noEnvironment)
			}
			return c
		}, "environment, DSNs as URLs with user:pass@: --listen printed as"},
		{"a parse that prints its arguments", func() Command {
			c := fake(nil)
			parse := c.Parse
			c.Parse = func(w io.Writer, args []string, lookup func(string) (string, bool)) error {
				err := parse(w, args, lookup)
				fmt.Fprintf(w, "# %s\n", strings.Join(args, " "))
				return err
			}
			return c
		}, "command line, DSNs as URLs with user:pass@: --print-config shows a secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{T: t}
			CheckPrintConfig(r, tt.cmd())
			all := strings.Join(r.errs, "\n")
			if tt.report == "" && len(r.errs) > 0 {
				t.Fatalf("reports:\n%s", all)
			}
			if tt.report != "" && !strings.Contains(all, tt.report) {
				t.Fatalf("no report %q among:\n%s", tt.report, all)
			}
		})
	}
}
