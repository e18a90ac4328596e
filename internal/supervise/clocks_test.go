package supervise

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestClockReads: the package reads the time only through clocks.go, the
// run's clock (Config.Clock) or the wall clock named as such there, so
// that a test on a fake clock moves the whole schedule (issue #57: 14
// time.Now calls beside the clock, which only the budget used).
func TestClockReads(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	reads := map[string]bool{"Now": true, "Since": true, "Until": true, "After": true, "AfterFunc": true,
		"NewTimer": true, "NewTicker": true, "Tick": true, "Sleep": true}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "clocks.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "time" && reads[sel.Sel.Name] {
				t.Errorf("%s: time.%s: read the time through clocks.go (the run's clock, or the wall clock for what happens in real time)", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}
