package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// TestGolden loads every testdata/*.yaml and compares the outcome with
// testdata/*.golden: the Explain text for a valid config, the error text
// for an invalid one. Files named valid_* must load; the others must not.
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) == 0 {
		t.Fatal("no testdata/*.yaml")
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".yaml")
		t.Run(name, func(t *testing.T) {
			got := loadOutcome(t, in, strings.HasPrefix(name, "valid_"))
			golden := strings.TrimSuffix(in, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s: got\n%s\nwant\n%s", in, got, want)
			}
		})
	}
}

// loadOutcome loads a config and returns its explanation or its error.
func loadOutcome(t *testing.T, path string, wantValid bool) string {
	t.Helper()
	c, err := Load(path)
	if err != nil {
		if wantValid {
			t.Errorf("Load(%s): %v", path, err)
		}
		return err.Error() + "\n"
	}
	if !wantValid {
		t.Errorf("Load(%s) succeeded, want an error", path)
	}
	var b strings.Builder
	if err := c.Explain(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
