// Package flagenv lets every command-line flag also be set by an environment variable:
// flag --some-name reads PREFIX_SOME_NAME when it is not given on the command line. It also
// parses the list values the commands' flags share (PositiveInts).
package flagenv

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Name returns the environment variable of flag name under prefix ("GATEWAY_").
func Name(prefix, name string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Parse parses args into fs, then sets every flag that was not on the command line from
// its environment variable, if set (lookup is os.LookupEnv when nil). A flag on the command
// line wins; a bad value in the environment is an error naming the variable.
func Parse(fs *flag.FlagSet, args []string, prefix string, lookup func(string) (string, bool)) error {
	if lookup == nil {
		lookup = os.LookupEnv
	}
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
		}
	})
	return err
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
