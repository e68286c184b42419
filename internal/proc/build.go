package proc

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// ModuleRoot returns the root directory of the Go module the current directory is in.
func ModuleRoot(ctx context.Context) (string, error) {
	mod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	return filepath.Dir(strings.TrimSpace(string(mod))), nil
}

// Build builds the module's commands pkgs ("./cmd/dataplane", ...) into dir from the
// module's root: for the tests that run the real binaries.
func Build(ctx context.Context, dir string, pkgs ...string) error {
	root, err := ModuleRoot(ctx)
	if err != nil {
		return err
	}
	build := exec.CommandContext(ctx, "go", append([]string{"build", "-o", dir + "/"}, pkgs...)...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
	return nil
}
