package integrations

import (
	"os"
	"strings"
	"testing"
)

// TestRecipesAreTheFiles: what the package gives is the file on disk, with
// the placeholders filled, and a placeholder left unfilled is an error.
func TestRecipesAreTheFiles(t *testing.T) {
	vars := map[string]string{"{{LISTEN}}": "127.0.0.1:1", "{{USHER}}": "127.0.0.1:2", "{{ORIGIN}}": "127.0.0.1:3", "{{SITE}}": "http://127.0.0.1:1"}
	names := Names()
	if len(names) < 4 {
		t.Fatalf("recipes: %q", names)
	}
	for _, name := range names {
		got, err := Recipe(name, vars)
		if err != nil {
			t.Fatal(err)
		}
		disk, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		want := string(disk)
		for k, v := range vars {
			want = strings.ReplaceAll(want, k, v)
		}
		if got != want {
			t.Errorf("%s: the embedded recipe differs from the file", name)
		}
	}
	if _, err := Recipe("nginx.conf", map[string]string{"{{LISTEN}}": "127.0.0.1:1"}); err == nil || !strings.Contains(err.Error(), "{{") {
		t.Errorf("a placeholder left: %v", err)
	}
	if _, err := Recipe("nope.conf", vars); err == nil {
		t.Error("a recipe that does not exist: no error")
	}
}
