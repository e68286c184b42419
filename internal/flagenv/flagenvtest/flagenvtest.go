// Package flagenvtest checks that a command's --print-config cannot show a credential:
// every setting that holds one is a flagenv.Secret or flagenv.DSN, every setting whose name
// or help speaks of one is, or is a file path, or is declared harmless, and the printed
// settings show no secret from any source (command line, environment, --config file).
package flagenvtest

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/sekgate/gateway/internal/flagenv"
)

// Command describes a command's settings for CheckPrintConfig.
type Command struct {
	// Prefix is the settings' environment prefix ("GATEWAY_").
	Prefix string
	// FlagSet returns the command's flags as the command builds them.
	FlagSet func() *flag.FlagSet
	// Parse runs the command's own parse of args, reading the environment through lookup
	// and writing --print-config's output to w.
	Parse func(w io.Writer, args []string, lookup func(string) (string, bool)) error
	// Secrets names every setting that holds a credential.
	Secrets []string
	// NotSecrets names, with the reason, the settings whose name or help mentions a
	// credential but that hold none; settings ending in -file (paths) need no entry.
	NotSecrets map[string]string
}

// TB is the part of testing.TB CheckPrintConfig uses.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	TempDir() string
}

// credentialWord finds the settings that may hold a credential by their name or help.
var credentialWord = regexp.MustCompile(`(?i)secret|token|key|passw|credential|auth|bearer|signing|database|dsn|postgres`)

// The markers of the values CheckPrintConfig sets: a secret's must never be printed, a
// plain setting's always.
const (
	secretMarker = "s3cr3t"
	plainMarker  = "plain-value-"
)

// CheckPrintConfig reports on t every way c's --print-config could show a credential.
func CheckPrintConfig(t TB, c Command) {
	t.Helper()
	kinds := classify(t, c)
	for _, form := range dsnForms {
		for _, src := range sources {
			values := map[string]string{}
			for name, k := range kinds {
				values[name] = k.value(name, form)
			}
			out, err := src.run(t, c, values)
			if err != nil {
				t.Errorf("%s, DSNs %s: %v", src.name, form.name, err)
				continue
			}
			checkOutput(t, src.name+", DSNs "+form.name, out, kinds, values)
		}
	}
}

// kind is what a string-accepting setting is.
type kind int

const (
	plain kind = iota
	secret
	dsn
)

func (k kind) value(name string, form dsnForm) string {
	switch k {
	case secret:
		return "sk_live_" + secretMarker + "-" + name + "-0123456789abcdef0123456789abcdef"
	case dsn:
		return form.build(secretMarker + "-" + name)
	}
	return plainMarker + name
}

// classify returns the kind of each of c's settings that accept a string, and reports the
// settings whose type and the Secrets list disagree or that look like plain credentials.
func classify(t TB, c Command) map[string]kind {
	t.Helper()
	kinds := map[string]kind{}
	probe := c.FlagSet()
	c.FlagSet().VisitAll(func(f *flag.Flag) {
		k := plain
		switch f.Value.(type) {
		case *flagenv.Secret:
			k = secret
		case *flagenv.DSN:
			k = dsn
		}
		listed := slices.Contains(c.Secrets, f.Name)
		switch {
		case k != plain && !listed:
			t.Errorf("--%s is a %T but not in the list of secrets", f.Name, f.Value)
		case k == plain && listed:
			t.Errorf("--%s is listed as a secret but is a plain %T: make it a flagenv.Secret or flagenv.DSN", f.Name, f.Value)
		}
		if probe.Set(f.Name, plainMarker+f.Name) != nil {
			return // not a string: a number, a duration, a switch
		}
		kinds[f.Name] = k
		if k == plain && credentialWord.MatchString(f.Name+" "+f.Usage) &&
			!strings.HasSuffix(f.Name, "-file") && c.NotSecrets[f.Name] == "" {
			t.Errorf("--%s mentions a credential (%q) but is a plain string: make it a flagenv.Secret or flagenv.DSN, "+
				"or list it among the settings that are not secrets", f.Name, credentialWord.FindString(f.Name+" "+f.Usage))
		}
	})
	for _, name := range append(slices.Clone(c.Secrets), keys(c.NotSecrets)...) {
		if probe.Lookup(name) == nil {
			t.Errorf("--%s is listed but is no setting", name)
		}
	}
	return kinds
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// checkOutput reports a printed secret or password, and a setting not printed as expected.
func checkOutput(t TB, what, out string, kinds map[string]kind, values map[string]string) {
	t.Helper()
	if strings.Contains(out, secretMarker) {
		t.Errorf("%s: --print-config shows a secret:\n%s", what, out)
	}
	var printed map[string]string
	if err := yaml.Unmarshal([]byte(out), &printed); err != nil {
		t.Errorf("%s: --print-config is not YAML: %v\n%s", what, err, out)
		return
	}
	for name, k := range kinds {
		got, ok := printed[name]
		var good bool
		switch k {
		case plain:
			good = got == values[name]
		case secret:
			good = got == flagenv.Redacted
		case dsn:
			good = got == flagenv.RedactDSN(values[name]) && strings.Contains(got, flagenv.RedactedPassword)
		}
		if !ok || !good {
			t.Errorf("%s: --%s printed as %q", what, name, got)
		}
	}
}

// dsnForm builds a connection string with a given password.
type dsnForm struct {
	name  string
	build func(password string) string
}

var dsnForms = []dsnForm{
	{"as URLs with user:pass@", func(p string) string { return "postgres://app:" + p + "@db.example:5432/gateway?sslmode=require" }},
	{"as URLs with password=", func(p string) string { return "postgresql://app@db.example/gateway?password=" + p + "&sslmode=require" }},
	{"as keywords with a quoted password", func(p string) string {
		return "host=db.example user=app password='" + p + " with spaces' dbname=gateway"
	}},
}

// source gives every setting its value one way and runs the command's --print-config.
type source struct {
	name string
	run  func(t TB, c Command, values map[string]string) (string, error)
}

var sources = []source{
	{"command line", func(_ TB, c Command, values map[string]string) (string, error) {
		args := []string{"--print-config"}
		for name, v := range values {
			args = append(args, "--"+name, v)
		}
		return printed(c, args, noEnvironment)
	}},
	{"environment", func(_ TB, c Command, values map[string]string) (string, error) {
		env := map[string]string{}
		for name, v := range values {
			env[flagenv.Name(c.Prefix, name)] = v
		}
		return printed(c, []string{"--print-config"}, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	}},
	{"config file", func(t TB, c Command, values map[string]string) (string, error) {
		b, err := yaml.Marshal(values)
		if err != nil {
			return "", err
		}
		path := filepath.Join(t.TempDir(), "settings.yaml")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return "", err
		}
		return printed(c, []string{"--config", path, "--print-config"}, noEnvironment)
	}},
}

func noEnvironment(string) (string, bool) { return "", false }

// printed runs c's parse with args and returns what --print-config wrote.
func printed(c Command, args []string, lookup func(string) (string, bool)) (string, error) {
	var out strings.Builder
	err := c.Parse(&out, args, lookup)
	if !errors.Is(err, flagenv.ErrPrintedConfig) {
		return "", errors.Join(errors.New("--print-config did not print"), err)
	}
	return out.String(), nil
}
