package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Every error value of the package is declared in errors.go and registered with fixed (so
// its envelopes are cached): a package-level variable built with apierror anywhere else,
// or in errors.go without fixed, fails here.
func TestErrorsDeclaredInOneFile(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, v := range vs.Values {
					call, ok := v.(*ast.CallExpr)
					if !ok {
						continue
					}
					if !buildsError(call) {
						continue
					}
					fn, _ := call.Fun.(*ast.Ident)
					switch {
					case name != "errors.go":
						t.Errorf("%s: error %s is declared outside errors.go", fset.Position(vs.Pos()), vs.Names[i].Name)
					case fn == nil || fn.Name != "fixed":
						t.Errorf("%s: error %s is not registered with fixed", fset.Position(vs.Pos()), vs.Names[i].Name)
					}
				}
			}
		}
	}
}

// buildsError reports whether call builds an *apierror.Error: apierror.New(...),
// fixed(...), or a method chain on one (….WithRetryAfter(5)).
func buildsError(call *ast.CallExpr) bool {
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		return fn.Name == "fixed"
	case *ast.SelectorExpr:
		if id, ok := fn.X.(*ast.Ident); ok {
			return id.Name == "apierror"
		}
		if inner, ok := fn.X.(*ast.CallExpr); ok {
			return buildsError(inner)
		}
	}
	return false
}
