package deptest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNothingImportsCmd: cmd/ holds the mains only; no package of the module, nor its
// tests, imports one.
func TestNothingImportsCmd(t *testing.T) {
	pkgs, err := List(false, Module+"/...")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("listed %d packages of %s", len(pkgs), Module)
	}
	for _, p := range pkgs {
		for _, imp := range append(append(p.Imports, p.TestImports...), p.XTestImports...) {
			if under(imp, Module+"/cmd") && !under(p.ImportPath, Module+"/cmd") {
				t.Errorf("%s imports %s (mains only live in cmd/)", p.ImportPath, imp)
			}
		}
	}
}

// TestGoModLight: the main module's go.mod requires none of the heavy modules, not even
// indirectly, nor names one as a tool; they belong to the deploy module.
func TestGoModLight(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "module "+Module+"\n") {
		t.Fatalf("../../go.mod is not %s's", Module)
	}
	for _, line := range heavyLines(b) {
		t.Error(line)
	}
}

// heavyLines returns a line for each module of Heavy that go.mod text names.
func heavyLines(gomod []byte) []string {
	var out []string
	for i, line := range strings.Split(string(gomod), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == "require" || f[0] == "tool" || f[0] == "replace" || f[0] == "exclude") {
			f = f[1:]
		}
		if len(f) == 0 {
			continue
		}
		for prefix, why := range Heavy {
			if under(f[0], prefix) {
				out = append(out, fmt.Sprintf("go.mod:%d names %s: %s", i+1, f[0], why))
			}
		}
	}
	return out
}

func TestHeavyLines(t *testing.T) {
	tests := []struct {
		gomod string
		want  int
	}{
		{"module m\n\nrequire (\n\tgithub.com/tidwall/gjson v1.20.0\n)\n", 0},
		{"require (\n\tk8s.io/api v0.37.2\n\tgithub.com/go-logr/logr v1.4.4 // indirect\n)\n", 1},
		{"require (\n\tsigs.k8s.io/yaml v1.6.0 // indirect\n)\n", 1},
		{"require github.com/openai/openai-go/v3 v3.96.0\n", 1},
		{"tool github.com/tsenart/vegeta/v12\n", 1},
		{"tool (\n\tgithub.com/stripe/stripe-mock\n)\n", 1},
		{"require github.com/prometheus/client_golang v1.19.1\n", 0},
		{"require github.com/prometheus/prometheus v0.53.1\n", 1},
	}
	for _, tt := range tests {
		if got := heavyLines([]byte(tt.gomod)); len(got) != tt.want {
			t.Errorf("%q: %q, want %d lines", tt.gomod, got, tt.want)
		}
	}
}

// TestViolations: the check finds a dependency that is there, with its importer and
// reason, and none that is not.
func TestViolations(t *testing.T) {
	const sim = Module + "/internal/simulator"
	tests := []struct {
		name string
		bad  map[string]string
		want string // a violation starting with this; "" for none
	}{
		{"a module below the prefix", map[string]string{"github.com/tidwall": "why"},
			"github.com/tidwall/gjson (imported by "},
		{"the package itself", map[string]string{sim: "tooling"}, sim + " (imported by ): tooling"},
		{"a prefix that only shares letters", map[string]string{"github.com/tidwall/gjs": "why"}, ""},
		{"a module it does not reach", map[string]string{"github.com/jackc/pgx": "why"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Violations(tt.bad, sim)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, line := range v {
				found = found || tt.want != "" && strings.HasPrefix(line, tt.want)
			}
			if tt.want == "" && len(v) != 0 || tt.want != "" && !found {
				t.Errorf("violations %q, want one starting %q", v, tt.want)
			}
		})
	}
}
