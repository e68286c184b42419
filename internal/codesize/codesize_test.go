package codesize

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a production function may be.
const maxFuncLines = 80

// maxServerLines bounds dataplane/server: the request's work belongs in its stages.
const maxServerLines = 1500

// notProduction are the folders of this module whose code only tests, benchmarks and
// local stacks run.
var notProduction = []string{
	"internal/simulator", "internal/respcheck", "internal/syncbuf", "internal/deptest",
	"internal/codesize", "controlplane/pgtest", "controlplane/testbox", "dataplane/internal/fixture",
	"controlplane/api/apitest", "deploy",
}

func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	return dir
}

// productionFiles are the module's production Go files, by path relative to root.
func productionFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			for _, np := range notProduction {
				if rel == np {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestFunctionsAreShort(t *testing.T) {
	dir := root(t)
	fset := token.NewFileSet()
	for _, rel := range productionFiles(t, dir) {
		f, err := parser.ParseFile(fset, filepath.Join(dir, rel), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				t.Errorf("%s: %s is %d lines, over %d", rel, fd.Name.Name, n, maxFuncLines)
			}
		}
	}
}

func TestServerPackageIsGlue(t *testing.T) {
	dir := root(t)
	lines := 0
	for _, rel := range productionFiles(t, dir) {
		if filepath.Dir(rel) != filepath.Join("dataplane", "server") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		lines += strings.Count(string(b), "\n")
	}
	if lines == 0 || lines >= maxServerLines {
		t.Errorf("dataplane/server has %d lines of production code; the bound is %d", lines, maxServerLines)
	}
}
