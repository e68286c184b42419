// Package binflags tells deployment tests which flags the gateway's binaries define, so a
// manifest or environment file that sets a flag a binary does not have fails its test.
package binflags

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

var flagLine = regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`)

// Flags builds the named binaries (cmd/<name>) and reads each one's flags from its -help
// output. It needs the go command on PATH.
func Flags(names ...string) (map[string]map[string]bool, error) {
	dir, err := os.MkdirTemp("", "gateway-flags")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	args := []string{"build", "-o", dir + string(os.PathSeparator)}
	for _, n := range names {
		args = append(args, "github.com/sekgate/gateway/cmd/"+n)
	}
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %v\n%s", err, out)
	}
	all := map[string]map[string]bool{}
	for _, n := range names {
		out, _ := exec.Command(filepath.Join(dir, n), "-help").CombinedOutput() // exits 2 after the usage
		set := map[string]bool{}
		for _, m := range flagLine.FindAllStringSubmatch(string(out), -1) {
			set[m[1]] = true
		}
		if len(set) < 3 {
			return nil, fmt.Errorf("%s -help listed %d flags:\n%s", n, len(set), out)
		}
		all[n] = set
	}
	return all, nil
}

// RuntimeEnv reports whether env is one of the Go runtime's own settings, which the
// deployment files set beside the binaries' flags (docs/configuration.md).
func RuntimeEnv(env string) bool {
	switch env {
	case "GOGC", "GOMEMLIMIT", "GODEBUG", "GOMAXPROCS":
		return true
	}
	return false
}

// EnvFlag maps GATEWAY_SOME_NAME to some-name (internal/flagenv's rule, reversed); ok is
// false for a variable without the prefix.
func EnvFlag(env string) (flag string, ok bool) {
	rest, ok := strings.CutPrefix(env, "GATEWAY_")
	if !ok {
		return "", false
	}
	return strings.ToLower(strings.ReplaceAll(rest, "_", "-")), true
}
