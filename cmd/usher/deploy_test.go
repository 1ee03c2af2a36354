package main

// Checks of the packaging under deploy/, the Dockerfile and the systemd
// unit. Neither Docker nor Kubernetes runs here, so these tests parse what
// they would run and cross-check it against usher's own config parser:
// ports, paths, users and secrets must agree between the files.

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/internal/config"
)

// repoRoot is the module root, seen from this package's directory.
const repoRoot = "../.."

func readRepoFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// yamlDocuments decodes every document of a YAML stream into generic
// values, failing the test on a syntax error.
func yamlDocuments(t *testing.T, name string, data []byte) []any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []any
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", name, len(docs)+1, err)
		}
		docs = append(docs, doc)
	}
}

// parseUsherConfig parses an usher config as serve would (without reading
// the files it names), failing the test with every problem.
func parseUsherConfig(t *testing.T, name, body string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatalf("%s is not a valid usher config:\n%v", name, err)
	}
	return cfg
}

// listenPort returns the port of a host:port listen address.
func listenPort(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("listen address %q: %v", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("listen address %q: port %v", addr, err)
	}
	return n
}

func TestDeployYAMLParses(t *testing.T) {
	t.Parallel()
	var files []string
	err := filepath.WalkDir(filepath.Join(repoRoot, "deploy"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ext := filepath.Ext(path); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The files the other tests read, at least.
	for _, want := range []string{"docker/usher.yaml", "systemd/usher.yaml", "kubernetes/kustomization.yaml", "kubernetes/deployment.yaml"} {
		if !slices.Contains(files, filepath.Join(repoRoot, "deploy", want)) {
			t.Errorf("deploy/%s is missing", want)
		}
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		docs := yamlDocuments(t, path, data)
		if len(docs) == 0 {
			t.Errorf("%s holds no YAML document", path)
		}
		for i, doc := range docs {
			if _, ok := doc.(map[string]any); !ok {
				t.Errorf("%s: document %d is a %T, not a mapping", path, i+1, doc)
			}
		}
	}
}
