package flagenv

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// ErrPrintedConfig is Parse's answer when --print-config was given: the effective settings
// were written and the command should exit 0 without starting.
var ErrPrintedConfig = errors.New("configuration printed")

// The settings Parse adds to every command's flags.
const (
	configFlag      = "config"
	printConfigFlag = "print-config"
)

// Register adds --config and --print-config to fs unless the command defines them itself.
func Register(fs *flag.FlagSet) (file *string, print *bool) {
	file, print = new(string), new(bool)
	if fs.Lookup(configFlag) == nil {
		fs.StringVar(file, configFlag, "", "YAML file of settings keyed by flag name (environment and flags win over it)")
	}
	if fs.Lookup(printConfigFlag) == nil {
		fs.BoolVar(print, printConfigFlag, false, "print the effective settings as YAML, secrets redacted, and exit")
	}
	return file, print
}

// applyFile sets from the YAML file at path every flag that neither the command line nor
// the environment set (skip). Keys are flag names; a key that names no flag is an error, as
// is a value that is not a scalar, a list (joined with commas) or a map of scalars (joined
// as k=v pairs with commas, the form --region-urls takes).
func applyFile(fs *flag.FlagSet, path string, skip map[string]bool) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == configFlag || k == printConfigFlag || fs.Lookup(k) == nil {
			return fmt.Errorf("--config %s: unknown setting %q", path, k)
		}
		n := doc[k]
		v, err := scalarValue(&n)
		if err != nil {
			return fmt.Errorf("--config %s: %s: %w", path, k, err)
		}
		if skip[k] {
			continue
		}
		if err := fs.Set(k, v); err != nil {
			return fmt.Errorf("--config %s: %s=%q: %w", path, k, v, err)
		}
	}
	return nil
}

func scalarValue(n *yaml.Node) (string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value, nil
	case yaml.SequenceNode:
		parts := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return "", errors.New("list items must be plain values")
			}
			parts = append(parts, c.Value)
		}
		return strings.Join(parts, ","), nil
	case yaml.MappingNode:
		parts := make([]string, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
				return "", errors.New("map entries must be plain values")
			}
			parts = append(parts, k.Value+"="+v.Value)
		}
		return strings.Join(parts, ","), nil
	}
	return "", errors.New("unsupported value")
}

// Print writes every setting of fs with its effective value as YAML, in flag order. Values
// are what the flags' String methods give, so a setting is redacted by its type: a Secret
// prints as Redacted, a DSN without its passwords. As a second line of defence, a password in
// any other value that is a URL (https://user:pass@host) is masked as url.URL.Redacted does.
func Print(w io.Writer, fs *flag.FlagSet) error {
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == configFlag || f.Name == printConfigFlag {
			return
		}
		out, _ := yaml.Marshal(map[string]string{f.Name: maskURLPassword(f.Value.String())})
		b.Write(out)
	})
	_, err := io.WriteString(w, b.String())
	return err
}

// maskURLPassword returns v with its password masked when v is a URL that has one.
func maskURLPassword(v string) string {
	if !strings.Contains(v, "://") {
		return v
	}
	if u, err := url.Parse(v); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			return u.Redacted()
		}
	}
	return v
}

// Done reports whether err from Parse means the command has answered already (--help or
// --print-config) and should exit 0.
func Done(err error) bool { return errors.Is(err, flag.ErrHelp) || errors.Is(err, ErrPrintedConfig) }
