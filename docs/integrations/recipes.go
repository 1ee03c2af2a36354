// Package integrations holds the recipes for running usher beside a proxy
// that already serves the site (forward auth): the configuration files the
// documents in this folder show and explain. They are embedded so that
// usher's end-to-end tests and usher bench run the very files the
// documentation shows, with only their placeholders filled in.
package integrations

import (
	"embed"
	"fmt"
	"sort"
	"strings"
)

//go:embed nginx.conf Caddyfile haproxy.cfg usher-auth.lua
var files embed.FS

// Names lists the embedded recipe files.
func Names() []string {
	entries, _ := files.ReadDir(".")
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// Recipe returns the file name with each placeholder ({{LISTEN}},
// {{USHER}}, {{ORIGIN}}, {{SITE}}: the keys of vars, braces included)
// replaced by its value. It fails when the file does not exist or a
// placeholder is left that vars does not fill.
func Recipe(name string, vars map[string]string) (string, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("recipe %q: %w", name, err)
	}
	pairs := make([]string, 0, 2*len(vars))
	for k, v := range vars {
		pairs = append(pairs, k, v)
	}
	s := strings.NewReplacer(pairs...).Replace(string(b))
	if i := strings.Index(s, "{{"); i >= 0 {
		end := strings.Index(s[i:], "}}")
		if end < 0 {
			end = len(s) - i - 2
		}
		return "", fmt.Errorf("recipe %q: placeholder %s is not filled", name, s[i:i+end+2])
	}
	return s, nil
}
