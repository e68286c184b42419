// Package deptest checks what the gateway's packages link, from `go list -deps`: the
// boundaries between the planes, the tools and the heavy modules are Go tests (each
// production binary's TestDeps), not greps. Only tests import it.
package deptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// Module is the gateway's main module path.
const Module = "github.com/sekgate/gateway"

// Tooling are the packages of the main module that only tests may import: the provider
// simulator and the test helpers beside it. The deploy module's packages (tools, harness)
// cannot be imported from here at all; it is listed for completeness.
var Tooling = map[string]string{
	Module + "/internal/simulator": "the provider simulator is a test upstream",
	Module + "/internal/respcheck": "a test helper",
	Module + "/internal/syncbuf":   "a test helper",
	Module + "/internal/deptest":   "a test helper",
	Module + "/deploy":             "the deploy module holds tools and heavy tests",
}

// Heavy are the modules only the deploy module may require: a production binary linking
// one, or the main module's go.mod listing one, is a mistake.
var Heavy = map[string]string{
	"github.com/chromedp":                    "a browser driver (console tests)",
	"k8s.io":                                 "Kubernetes types (manifest tests)",
	"sigs.k8s.io":                            "Kustomize and Kubernetes YAML (manifest tests)",
	"github.com/prometheus/prometheus":       "the Prometheus server (PromQL in tests)",
	"github.com/anthropics/anthropic-sdk-go": "an SDK the conformance tests use",
	"github.com/openai/openai-go":            "an SDK the conformance tests use",
	"github.com/stripe/stripe-mock":          "a Stripe fake the payment tests run",
	"github.com/tsenart/vegeta":              "the benchmark's load generator",
}

// Production is what no production binary may reach: tooling, heavy modules and the
// testing package.
func Production() map[string]string {
	bad := map[string]string{"testing": "production code does not link the testing package"}
	for p, why := range Tooling {
		bad[p] = why
	}
	for p, why := range Heavy {
		bad[p] = why
	}
	return bad
}

// Package is what `go list -json` says of a package, as far as the checks read it.
type Package struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// List runs `go list -json` on patterns (with -deps when deps is set) and returns the
// packages.
func List(deps bool, patterns ...string) ([]Package, error) {
	args := []string{"list", "-json=ImportPath,Imports,TestImports,XTestImports"}
	if deps {
		args = append(args, "-deps")
	}
	cmd := exec.Command("go", append(args, patterns...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// under reports whether import path p is prefix or a package below it.
func under(p, prefix string) bool {
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// Violations returns one line per package in the dependencies of patterns that lies under a
// prefix of bad, naming the packages that import it and the reason.
func Violations(bad map[string]string, patterns ...string) ([]string, error) {
	pkgs, err := List(true, patterns...)
	if err != nil {
		return nil, err
	}
	importers := map[string][]string{}
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			importers[imp] = append(importers[imp], p.ImportPath)
		}
	}
	var out []string
	for _, p := range pkgs {
		for prefix, why := range bad {
			if under(p.ImportPath, prefix) {
				out = append(out, fmt.Sprintf("%s (imported by %s): %s", p.ImportPath,
					strings.Join(importers[p.ImportPath], ", "), why))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// Check fails t for each violation of bad in the dependencies of patterns.
func Check(t testing.TB, bad map[string]string, patterns ...string) {
	t.Helper()
	v, err := Violations(bad, patterns...)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range v {
		t.Errorf("%v reach %s", patterns, line)
	}
}
