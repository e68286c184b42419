package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"github.com/sekgate/gateway/dataplane/routing"
)

// Every failure class proxy declares has its row in the failure table, with a breaker
// effect and a record result, and every class a client can be answered for has an answer.
func TestFailureTableCoversEveryClass(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../proxy/classify.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var classes []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if strings.HasPrefix(name.Name, "Fail") && i < len(vs.Values) {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
					v, _ := strconv.Unquote(lit.Value)
					classes = append(classes, v)
				}
			}
		}
		return true
	})
	if len(classes) < 5 {
		t.Fatalf("found only %v in proxy/classify.go", classes)
	}
	for _, c := range classes {
		row, ok := failures[c]
		switch {
		case !ok:
			t.Errorf("failure class %q has no row in the failure table", c)
		case row.health != routing.ErrRouteFailed && row.health != routing.ErrUnreachable && row.health != routing.ErrNeutral:
			t.Errorf("%q: breaker effect %v", c, row.health)
		case row.result == "":
			t.Errorf("%q: no record result", c)
		case row.retry && row.client == nil:
			t.Errorf("%q: retried but no answer for the client when every route fails", c)
		}
	}
	if got := failureOf("something new"); got != failures["transport"] {
		t.Errorf("an unknown class is not a transport failure: %+v", got)
	}
}
