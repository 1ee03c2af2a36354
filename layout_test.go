package usher_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

type listedPackage struct {
	ImportPath string
	Doc        string
	Imports    []string
	Standard   bool
}

// listPackages runs go list over the module's packages (not their tests).
func listPackages(t *testing.T) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Doc,Imports,Standard", "./...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

const module = "github.com/usherhq/usher"

// TestLayout keeps the dependencies pointing one way (docs/design.md, Packages): the
// domain imports the standard library only, the engine knows neither HTTP
// nor a concrete store, stores never import each other, and only cmd names
// concrete stores.
func TestLayout(t *testing.T) {
	for _, p := range listPackages(t) {
		for _, imp := range p.Imports {
			internal := strings.HasPrefix(imp, module+"/")
			switch {
			case p.ImportPath == module && (internal || strings.Contains(strings.SplitN(imp, "/", 2)[0], ".")):
				t.Errorf("the domain package imports %s; it may import the standard library only", imp)
			case strings.HasPrefix(p.ImportPath, module+"/internal/admission") &&
				(strings.HasPrefix(imp, "net/http") || strings.HasPrefix(imp, module+"/internal/store")):
				t.Errorf("the engine imports %s", imp)
			case strings.HasPrefix(imp, module+"/internal/store/") && !strings.HasSuffix(imp, "/storetest") &&
				!strings.HasPrefix(p.ImportPath, module+"/cmd/"):
				t.Errorf("%s names the concrete store %s; only cmd may", p.ImportPath, imp)
			}
		}
	}
}

// TestPackagesHaveDocs checks that every package says what it is for.
func TestPackagesHaveDocs(t *testing.T) {
	for _, p := range listPackages(t) {
		if strings.TrimSpace(p.Doc) == "" {
			t.Errorf("package %s has no doc comment", p.ImportPath)
		}
	}
}
