package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestReferenceUpToDate fails when docs/configuration.md is not what the
// generator writes from the code: a field added, renamed, given another
// default or rule, or its doc comment edited, without running
// go run ./internal/config/gen.
func TestReferenceUpToDate(t *testing.T) {
	t.Parallel()
	const root = "../../.."
	want, err := Reference(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, Output))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run go run ./internal/config/gen from the module root", Output)
	}
}
