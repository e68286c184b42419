package deptest

import (
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
// indirectly; they belong to the deploy module.
func TestGoModLight(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "module "+Module+"\n") {
		t.Fatalf("../../go.mod is not %s's", Module)
	}
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) == 0 {
			continue
		}
		for prefix, why := range Heavy {
			if under(f[0], prefix) {
				t.Errorf("go.mod:%d lists %s: %s", i+1, f[0], why)
			}
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
