package integrations

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestRecipesAreTheFiles: what the package gives is the file on disk, with
// the placeholders filled, and a placeholder left unfilled is an error.
func TestRecipesAreTheFiles(t *testing.T) {
	vars := map[string]string{"{{LISTEN}}": "127.0.0.1:1", "{{USHER}}": "127.0.0.1:2", "{{USHER_AUTH}}": "127.0.0.1:4", "{{ORIGIN}}": "127.0.0.1:3", "{{SITE}}": "http://127.0.0.1:1", "{{AUTH_CACHE}}": "/tmp/c"}
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

// TestPagesShowTheFiles: each page's block after "<!-- file: NAME -->" is
// the file NAME as it is, and every recipe file is shown on some page.
func TestPagesShowTheFiles(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for {
			i := strings.Index(text, "<!-- file: ")
			if i < 0 {
				break
			}
			text = text[i+len("<!-- file: "):]
			name, rest, _ := strings.Cut(text, " -->\n")
			open := strings.Index(rest, "```")
			nl := strings.IndexByte(rest[open:], '\n')
			body := rest[open+nl+1:]
			end := strings.Index(body, "```\n")
			if open != 0 || nl < 0 || end < 0 {
				t.Fatalf("%s: the file %s is not followed by a fenced block", page, name)
			}
			want, err := os.ReadFile(name)
			if err != nil {
				t.Fatalf("%s shows %s: %v", page, name, err)
			}
			if body[:end] != string(want) {
				t.Errorf("%s shows %s otherwise than the file is", page, name)
			}
			shown[name] = true
			text = body[end:]
		}
	}
	files, _ := filepath.Glob("*")
	for _, f := range files {
		if strings.HasSuffix(f, ".md") || strings.HasSuffix(f, ".go") {
			continue
		}
		if !shown[f] {
			t.Errorf("no page shows %s", f)
		}
	}
}

// TestUntestedRecipesParse: the recipes no test runs (no Traefik, Envoy or
// cluster here) are at least valid YAML, with what their pages explain.
func TestUntestedRecipesParse(t *testing.T) {
	for name, wants := range map[string][]string{
		"traefik-dynamic.yml":     {"forwardAuth", "authResponseHeaders", "addAuthCookiesToResponse", "X-Usher-Admission", "__usher_wr"},
		"traefik-kubernetes.yaml": {"traefik.io/v1alpha1", "forwardAuth", "authResponseHeaders", "addAuthCookiesToResponse"},
		"envoy.yaml":              {"envoy.filters.http.ext_authz", "path_prefix", "allowed_upstream_headers", "allowed_client_headers_on_success", "x-usher-admission"},
		"ingress-nginx.yaml":      {"nginx.ingress.kubernetes.io/auth-url", "nginx.ingress.kubernetes.io/auth-response-headers", "auth-snippet", "configuration-snippet", "X-Forwarded-Uri"},
	} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		docs := 0
		for {
			var v map[string]any
			err := dec.Decode(&v)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			docs++
		}
		if docs == 0 {
			t.Errorf("%s: no YAML document", name)
		}
		for _, w := range wants {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s does not mention %s", name, w)
			}
		}
	}
}
