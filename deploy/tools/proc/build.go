package proc

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// RepoRoot returns the repository's root directory: that of the gateway's main module, which
// the deploy module requires (replaced by its parent directory).
func RepoRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/sekgate/gateway").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m github.com/sekgate/gateway: %w", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("go list -m github.com/sekgate/gateway: no directory")
	}
	return dir, nil
}

// Build builds commands into dir for the tests that run the real binaries. Each of pkgs is
// a path from the repository's root: "./cmd/dataplane" (a production binary, built in the
// main module as `make build` does) or "./deploy/cmd/simulator" (a tool, built in the
// deploy module).
func Build(ctx context.Context, dir string, pkgs ...string) error {
	root, err := RepoRoot(ctx)
	if err != nil {
		return err
	}
	var main, tools []string
	for _, p := range pkgs {
		if rest, ok := strings.CutPrefix(p, "./deploy/"); ok {
			tools = append(tools, "./"+rest)
		} else {
			main = append(main, p)
		}
	}
	for _, b := range []struct {
		dir  string
		pkgs []string
	}{{root, main}, {filepath.Join(root, "deploy"), tools}} {
		if len(b.pkgs) == 0 {
			continue
		}
		build := exec.CommandContext(ctx, "go", append([]string{"build", "-o", dir + "/"}, b.pkgs...)...)
		build.Dir = b.dir
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", strings.Join(b.pkgs, " "), err, out)
		}
	}
	return nil
}
