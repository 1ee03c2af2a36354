package admin

import (
	"fmt"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/config"
)

// TestDashboardFiles: the page and its two files are served without a
// token, with a strict Content-Security-Policy and their types; nothing
// else is served without one; the page loads nothing from elsewhere and
// has no inline script or style.
func TestDashboardFiles(t *testing.T) {
	a := newAPITest(t, nil, "")
	for _, tc := range []struct{ path, ctype, contains string }{
		{"/", "text/html; charset=utf-8", `<input type="password" id="token"`},
		{"/dashboard/app.js", "text/javascript; charset=utf-8", `"/api/v1/live"`},
		{"/dashboard/app.css", "text/css; charset=utf-8", ":focus-visible"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			rec := a.do(t, "GET", tc.path, "", "", "")
			if rec.Code != http.StatusOK {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			h := rec.Header()
			if h.Get("Content-Type") != tc.ctype || h.Get("Content-Security-Policy") != dashboardCSP ||
				h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "no-referrer" {
				t.Fatalf("headers %v", h)
			}
			body := rec.Body.String()
			if !strings.Contains(body, tc.contains) {
				t.Fatalf("no %q in the body", tc.contains)
			}
			// Nothing from elsewhere: the only absolute URL is the SVG
			// namespace.
			for _, u := range regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}[^\s"')]*`).FindAllString(body, -1) {
				if u != "http://www.w3.org/2000/svg" {
					t.Errorf("absolute URL %q", u)
				}
			}
		})
	}
	for _, directive := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "form-action 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(dashboardCSP, directive) {
			t.Errorf("the CSP lacks %s", directive)
		}
	}
	page := a.do(t, "GET", "/", "", "", "").Body.String()
	if regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]`).MatchString(page) || strings.Contains(page, "style=") || regexp.MustCompile(`\son[a-z]+=`).MatchString(page) {
		t.Fatal("the page has inline script or style, which its CSP refuses")
	}
	// The login form never sends the token in a URL, even without script.
	if !strings.Contains(page, `<form id="login" method="post"`) {
		t.Fatal("the login form is not a POST")
	}

	for _, path := range []string{"/dashboard/", "/dashboard/index.html", "/dashboard/x.js", "/favicon.ico", "/api/v1/live", "/api/v1/whoami", "/index.html"} {
		rec := a.do(t, "GET", path, "", "", "")
		if rec.Code != http.StatusUnauthorized && rec.Code != http.StatusNotFound {
			t.Errorf("GET %s without a token: %d", path, rec.Code)
		}
		if rec.Code == http.StatusNotFound && !strings.HasPrefix(path, "/dashboard/") {
			t.Errorf("GET %s without a token: 404 before 401", path)
		}
	}
	if rec := a.do(t, "POST", "/", "", "", "x"); rec.Code != http.StatusUnauthorized {
		t.Errorf("POST / without a token: %d", rec.Code)
	}
}

// TestWhoami: the token's name and role; 401 without one.
func TestWhoami(t *testing.T) {
	a := newAPITest(t, nil, "")
	for tok, want := range map[string]WhoamiView{writeToken: {"admin", "write"}, readToken: {"viewer", "read"}} {
		rec := a.do(t, "GET", "/api/v1/whoami", tok, "", "")
		if got := MustDecode[WhoamiView](t, rec); rec.Code != http.StatusOK || got != want {
			t.Errorf("whoami: %d %+v, want %+v", rec.Code, got, want)
		}
	}
	if rec := a.do(t, "GET", "/api/v1/whoami", "", "", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("whoami without a token: %d", rec.Code)
	}
}

// TestDashboardContrast reads the dashboard's colours from app.css (every
// colour is a variable of :root; a literal colour elsewhere fails) and
// checks WCAG 2 AA: 4.5:1 for text, 3:1 for lines, borders and the focus
// ring (non-text contrast, 1.4.11). The legends are text in their line's
// colour on the chart's panel, so each line colour is held to 4.5:1.
func TestDashboardContrast(t *testing.T) {
	b, err := dashboardFS.ReadFile("dashboard/app.css")
	if err != nil {
		t.Fatal(err)
	}
	css := string(b)
	m := regexp.MustCompile(`(?s):root \{(.*?)\}`).FindStringSubmatchIndex(css)
	if m == nil {
		t.Fatal("no :root block")
	}
	vars := map[string]string{}
	for _, decl := range strings.Split(css[m[2]:m[3]], ";") {
		if k, v, ok := strings.Cut(decl, ":"); ok {
			vars[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if lit := regexp.MustCompile(`#[0-9a-fA-F]{3,6}\b`).FindString(css[m[1]:]); lit != "" {
		t.Fatalf("colour %s outside :root", lit)
	}
	pairs := []struct {
		fg, bg string
		min    float64
	}{
		{"--fg", "--bg", 4.5}, {"--fg", "--panel", 4.5}, {"--muted", "--bg", 4.5}, {"--muted", "--panel", 4.5},
		{"--accent", "--bg", 4.5}, {"--on-accent", "--accent", 4.5}, {"--on-accent", "--pressed", 4.5},
		{"--on-accent", "--suspended", 4.5}, {"--error", "--bg", 4.5}, {"--pressed", "--error-bg", 4.5},
		{"--disabled-fg", "--disabled-bg", 4.5},
		{"--active", "--panel", 4.5}, {"--limit", "--panel", 4.5}, {"--admit", "--panel", 4.5},
		{"--wait", "--panel", 4.5}, {"--p95", "--panel", 4.5},
		{"--focus", "--bg", 3}, {"--focus", "--panel", 3}, {"--input-border", "--bg", 3},
	}
	for _, p := range pairs {
		fg, err1 := luminance(vars[p.fg])
		bg, err2 := luminance(vars[p.bg])
		if err1 != nil || err2 != nil {
			t.Fatalf("%s %q, %s %q: %v %v", p.fg, vars[p.fg], p.bg, vars[p.bg], err1, err2)
		}
		r := (max(fg, bg) + 0.05) / (min(fg, bg) + 0.05)
		if r < p.min {
			t.Errorf("%s on %s: %.2f:1, want at least %.1f:1", p.fg, p.bg, r, p.min)
		}
	}
}

// luminance returns the WCAG relative luminance of a #rrggbb colour.
func luminance(hex string) (float64, error) {
	if len(hex) != 7 || hex[0] != '#' {
		return 0, fmt.Errorf("colour %q: want #rrggbb", hex)
	}
	var out float64
	for i, w := range []float64{0.2126, 0.7152, 0.0722} {
		v, err := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		if err != nil {
			return 0, fmt.Errorf("colour %q: %w", hex, err)
		}
		c := float64(v) / 255
		if c <= 0.03928 {
			c /= 12.92
		} else {
			c = math.Pow((c+0.055)/1.055, 2.4)
		}
		out += w * c
	}
	return out, nil
}

// TestDashboardEditorCoversRoomFields: the room editor of the dashboard
// (GROUPS in app.js) has a field for every room field PATCH
// /api/v1/rooms/{id} takes, as the config's own decoder lists them, and
// for every key of the blocks it edits as a whole, as the config encodes
// them; and for nothing else. A field added to rooms fails this until the
// editor has it.
func TestDashboardEditorCoversRoomFields(t *testing.T) {
	js, err := dashboardFS.ReadFile("dashboard/app.js")
	if err != nil {
		t.Fatal(err)
	}
	src := string(js)
	start := strings.Index(src, "var GROUPS = [")
	end := strings.Index(src[start:], "\n  ];\n")
	if start < 0 || end < 0 {
		t.Fatal("app.js has no GROUPS")
	}
	keyRe, objRe := regexp.MustCompile(`\{ k: "([^"]+)"`), regexp.MustCompile(`obj: "([^"]+)"`)
	top := map[string]bool{"webhooks": true} // the webhooks form
	blocks := make(map[string][]string)
	for _, g := range strings.Split(src[start:start+end], "{ id: ")[1:] {
		var keys []string
		for _, m := range keyRe.FindAllStringSubmatch(g, -1) {
			keys = append(keys, m[1])
		}
		if m := objRe.FindStringSubmatch(g); m != nil {
			top[m[1]] = true
			blocks[m[1]] = keys
			continue
		}
		for _, k := range keys {
			if field, _, ok := strings.Cut(k, "."); ok {
				k = field
			}
			top[k] = true
		}
	}
	var want []string
	for _, f := range config.RoomFields() {
		switch f {
		case "id", "shards", "events", "rules": // not PATCH's: the id and shards are fixed, events and rules have their panels
			continue
		}
		if ok, why := config.OverridableField(f); !ok {
			t.Errorf("room field %s is not overridable: %s", f, why)
		}
		want = append(want, f)
		if !top[f] {
			t.Errorf("the editor has no field for %s", f)
		}
		delete(top, f)
	}
	if !slices.Contains(want, "webhooks") {
		want = append(want, "webhooks")
		delete(top, "webhooks")
	}
	for f := range top {
		t.Errorf("the editor has a field %s that rooms do not", f)
	}

	// The blocks' keys, as the config writes a room with each block on.
	rm := &usher.Room{ID: "x", TicketBinding: usher.TicketBinding{ClientPrefix: true}}
	rm.Settings.ClientLimit = usher.ClientLimit{NewVisitorsPerMinute: 1}
	rm.Settings.ProofOfWork = usher.ProofOfWork{Difficulty: 1}
	rm.Settings.Autopilot = usher.Autopilot{Enabled: true, LatencyTarget: time.Second, HealthURL: "http://x/"}
	enc := config.EncodeRoom(rm)
	for name, keys := range blocks {
		m, ok := enc[name].(map[string]any)
		if !ok {
			t.Errorf("the editor's block %s is not a block of rooms", name)
			continue
		}
		if got, want := strings.Join(slices.Sorted(slices.Values(keys)), " "), strings.Join(slices.Sorted(maps.Keys(m)), " "); got != want {
			t.Errorf("the editor's %s has the fields\n%s\nthe config writes\n%s", name, got, want)
		}
	}
	if cookie, ok := enc["cookie_attributes"].(map[string]any); !ok || len(cookie) != 2 || !strings.Contains(src, `k: "cookie_attributes.samesite"`) || !strings.Contains(src, `k: "cookie_attributes.secure"`) {
		t.Errorf("cookie_attributes: the config writes %v", enc["cookie_attributes"])
	}
	t.Logf("%d room fields, %d blocks edited as a whole", len(want), len(blocks))
}
