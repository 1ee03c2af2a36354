package web

import (
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestContrast reads the pages' colours from layout.html, light and dark,
// and checks WCAG 2 contrast: at least 4.5:1 for text (AA, normal size;
// the footer is small and the room name and button are ordinary weight or
// semi-bold, so no large-text allowance is taken), at least 3:1 for the
// bar against its track and the focus ring against the card (non-text
// contrast, 1.4.11). Measured:
//
//	                                       light   dark
//	text (--fg) on the card                15.73  13.68
//	notes, labels, footer (--muted)         5.97   7.14
//	room name, button text (--accent)       6.29   6.82
//	pressed button (--card on --accent)     6.29   6.82
//	bar (--accent) on its track             5.04   5.30
//	focus ring (--fg) on the card          15.73  13.68
func TestContrast(t *testing.T) {
	b, err := os.ReadFile("templates/layout.html")
	if err != nil {
		t.Fatal(err)
	}
	css := string(b)
	roots := regexp.MustCompile(`:root\{([^}]*)\}`).FindAllStringSubmatch(css, -1)
	if len(roots) != 2 || !strings.Contains(css, "@media (prefers-color-scheme:dark){:root{") {
		t.Fatalf("want a light :root and a dark one, found %d", len(roots))
	}
	pairs := []struct {
		fg, bg string
		min    float64
	}{
		{"--fg", "--card", 4.5}, {"--muted", "--card", 4.5}, {"--accent", "--card", 4.5},
		{"--card", "--accent", 4.5}, {"--accent", "--track", 3}, {"--fg", "--card", 3},
		// Text never sits on the page background, but keep it readable
		// there too.
		{"--fg", "--bg", 4.5}, {"--muted", "--bg", 4.5},
	}
	for i, scheme := range []string{"light", "dark"} {
		vars := map[string]string{}
		for _, decl := range strings.Split(roots[i][1], ";") {
			if k, v, ok := strings.Cut(decl, ":"); ok && strings.HasPrefix(k, "--") {
				vars[k] = v
			}
		}
		for _, p := range pairs {
			fg, err1 := luminance(vars[p.fg])
			bg, err2 := luminance(vars[p.bg])
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: %s %q, %s %q: %v %v", scheme, p.fg, vars[p.fg], p.bg, vars[p.bg], err1, err2)
			}
			r := (max(fg, bg) + 0.05) / (min(fg, bg) + 0.05)
			t.Logf("%s: %s on %s: %.2f:1", scheme, p.fg, p.bg, r)
			if r < p.min {
				t.Errorf("%s: %s on %s: contrast %.2f:1, want at least %.1f:1", scheme, p.fg, p.bg, r, p.min)
			}
		}
	}
}

// luminance is the WCAG 2 relative luminance of a #rgb or #rrggbb colour.
func luminance(hex string) (float64, error) {
	hex = strings.TrimPrefix(strings.TrimSpace(hex), "#")
	if len(hex) == 3 {
		hex = string([]byte{hex[0], hex[0], hex[1], hex[1], hex[2], hex[2]})
	}
	v, err := strconv.ParseUint(hex, 16, 32)
	if err != nil || len(hex) != 6 {
		return 0, strconv.ErrSyntax
	}
	lin := func(c uint64) float64 {
		s := float64(c) / 255
		if s <= 0.03928 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(v>>16&0xff) + 0.7152*lin(v>>8&0xff) + 0.0722*lin(v&0xff), nil
}
