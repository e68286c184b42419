package httpjson

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// The control plane's fixed answers are declared in errors.go: an apierror.New or
// apierror.InvalidParam call in the handlers' packages whose arguments are all constants
// (a fixed answer) fails here. Answers that name the request's own values are built where
// they arise.
func TestFixedErrorsDeclaredHere(t *testing.T) {
	fset := token.NewFileSet()
	for _, dir := range []string{"../api", "../payments", "../signup", "../console", "."} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") || (dir == "." && filepath.Base(name) == "errors.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || !isAPIErrorCall(call) {
					return true
				}
				for _, a := range call.Args {
					if !constant(a) {
						return true
					}
				}
				t.Errorf("%s: a fixed error answer built outside controlplane/httpjson/errors.go", fset.Position(call.Pos()))
				return true
			})
		}
	}
}

func isAPIErrorCall(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "apierror" && (sel.Sel.Name == "New" || sel.Sel.Name == "InvalidParam")
}

// constant reports whether e is a literal, a package's exported name (http.StatusNotFound,
// apierror.CodeConflict) or a concatenation of those.
func constant(e ast.Expr) bool {
	switch v := e.(type) {
	case *ast.BasicLit:
		return true
	case *ast.SelectorExpr:
		_, ok := v.X.(*ast.Ident)
		return ok && v.Sel.IsExported()
	case *ast.BinaryExpr:
		return constant(v.X) && constant(v.Y)
	case *ast.ParenExpr:
		return constant(v.X)
	}
	return false
}
