package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// benchMaxLines bounds cmd/usher/bench.go: the flags, the call, the output
// and what the bench is given of the product (selfbench.Product).
const benchMaxLines = 300

// TestThinMain keeps usher bench's orchestration out of the product's
// main package: it is internal/bench/selfbench's. cmd/usher/bench.go parses
// the flags into a selfbench.Config and calls, in at most benchMaxLines
// lines, declaring no type of its own; no other file of cmd/usher (tests
// aside) is a bench_*.go file, names a bench scenario in a string of its
// own ("flash-crowd", "throughput", "standing-room": a scenario's switch,
// its result or its flags) or imports selfbench. Before the move, bench.go
// had 408 lines and the benchFlags type, and eleven bench_*.go files held
// the scenarios.
func TestThinMain(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	scenarios := []string{"flash-crowd", "throughput", "standing-room"}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if name == "bench.go" {
			if n := strings.Count(string(src), "\n"); n > benchMaxLines {
				t.Errorf("bench.go: %d lines, want at most %d: the bench's work belongs in internal/bench/selfbench", n, benchMaxLines)
			}
			for _, d := range f.Decls {
				if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
					t.Errorf("bench.go:%d declares a type: the bench's config and results are selfbench's", fset.Position(g.Pos()).Line)
				}
			}
			continue
		}
		if strings.HasPrefix(name, "bench_") {
			t.Errorf("%s: the bench's code belongs in internal/bench/selfbench", name)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/usherhq/usher/internal/bench/selfbench" {
				t.Errorf("%s imports %s: only bench.go calls the bench", name, p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && slices.Contains(scenarios, s) {
				t.Errorf("%s: names the bench scenario %q: the bench's code belongs in internal/bench/selfbench", fset.Position(lit.Pos()), s)
			}
			return true
		})
	}
}
