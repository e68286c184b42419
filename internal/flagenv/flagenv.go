// Package flagenv loads a command's settings, each defined once as a flag, from three
// sources: an optional YAML file (--config, keys are flag names, unknown keys are errors),
// then the environment (flag --some-name reads PREFIX_SOME_NAME), then the command line,
// each winning over the one before. --print-config shows the result; settings that hold
// credentials are of type Secret or DSN, whose printed forms are redacted, so what is safe
// to print follows from a setting's type, not its name. It also parses the list values the
// commands' flags share (PositiveInts).
package flagenv

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Name returns the environment variable of flag name under prefix ("GATEWAY_").
func Name(prefix, name string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Parse adds --config and --print-config to fs, parses args into it, then sets every flag
// that was not on the command line from its environment variable, if set (lookup is
// os.LookupEnv when nil), and every flag set by neither from the --config file, if any. A
// flag on the command line wins; a bad value is an error naming its source (a bad duration
// names the format, ErrDuration). With
// --print-config it writes the effective settings to standard output and returns
// ErrPrintedConfig.
func Parse(fs *flag.FlagSet, args []string, prefix string, lookup func(string) (string, bool)) error {
	return ParseTo(os.Stdout, fs, args, prefix, lookup)
}

// ParseTo is Parse writing --print-config's output to w.
func ParseTo(w io.Writer, fs *flag.FlagSet, args []string, prefix string, lookup func(string) (string, bool)) error {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	file, print := Register(fs)
	ExplainDurations(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		env := Name(prefix, f.Name)
		if v, ok := lookup(env); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s=%q: %w", env, v, e)
			}
			given[f.Name] = true
		}
	})
	if err != nil {
		return err
	}
	if *file != "" {
		if err := applyFile(fs, *file, given); err != nil {
			return err
		}
	}
	if *print {
		if err := Print(w, fs); err != nil {
			return err
		}
		return ErrPrintedConfig
	}
	return nil
}

// PositiveInts parses a flag's comma-separated list of positive integers ("1,4,16"), the
// form the benchmark commands take their rates and counts in. Empty items are skipped, so
// an empty string is an empty list; anything else that is not a positive integer is an
// error naming the item as a bad what ("rate", "count").
func PositiveInts(s, what string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad %s %q", what, f)
		}
		out = append(out, n)
	}
	return out, nil
}
