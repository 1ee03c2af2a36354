package web

import (
	"bytes"
	"flag"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var at = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; got:\n%s", name, got)
	}
}

// goldenLanguages are the languages whose pages have golden files.
var goldenLanguages = []string{"en-US", "de-DE", "ja-JP"}

// pageStates are the pages in each state, for golden files and checks
// over every language.
func pageStates() []struct {
	name, page string
	data       PageData
} {
	room := &usher.Room{ID: "sale", Name: "Spring <Sale>", Settings: usher.Settings{RefreshInterval: 20 * time.Second}}
	random := &usher.Room{ID: "drop", Settings: usher.Settings{QueueingMethod: usher.Random}}
	randomData := NewPageData(random, usher.Decision{Outcome: usher.Wait, Position: 3, WaitKnown: true,
		EstimatedWait: 70 * time.Minute, RefreshAfter: 30 * time.Second, Stats: usher.RoomStats{Waiting: 1250, AdmittedLastMinute: 50}}, at)
	randomData.WaitLow, randomData.WaitHigh = 45, 130
	prequeue := NewPageData(room, usher.Decision{Outcome: usher.Wait, RefreshAfter: 20 * time.Second}, at)
	prequeue.Prequeue, prequeue.EventName = true, "Spring <Sale> launch"
	prequeue.EventStart = at.Add(2*time.Hour + 4*time.Minute + 34*time.Second)
	challenge := NewPageData(room, usher.Decision{}, at)
	challenge.Challenge, challenge.Difficulty = "AQJrMQAAAABptXomCKzHRTnix91ivO1TfZqtJCSxDly-ZKAWkw.YOup6QP3wZyOX17BbkBNsg", 18
	return []struct {
		name, page string
		data       PageData
	}{
		{"waiting_fifo", PageWaiting, NewPageData(room, usher.Decision{Outcome: usher.Wait, Position: 1212, WaitKnown: true,
			EstimatedWait: 150 * time.Second, RefreshAfter: 19500 * time.Millisecond,
			Stats: usher.RoomStats{Waiting: 4000, AdmittedLastMinute: 404}}, at)},
		{"waiting_next", PageWaiting, NewPageData(room, usher.Decision{Outcome: usher.Wait, Position: 1, WaitKnown: true,
			EstimatedWait: 10 * time.Second, Stats: usher.RoomStats{Waiting: 1, AdmittedLastMinute: 1}}, at)},
		{"waiting_unknown", PageWaiting, NewPageData(room, usher.Decision{Outcome: usher.Wait}, at)},
		{"waiting_random", PageWaiting, randomData},
		{"waiting_queue_all", PageWaiting, NewPageData(room, usher.Decision{Outcome: usher.Wait, Position: 2, QueueAll: true}, at)},
		{"prequeue", PagePrequeue, prequeue},
		{"reject", PageReject, NewPageData(room, usher.Decision{Outcome: usher.Turn}, at)},
		{"challenge", PageChallenge, challenge},
	}
}

func TestPagesGolden(t *testing.T) {
	for _, lang := range goldenLanguages {
		for _, tt := range pageStates() {
			name := tt.name + "." + lang + ".html"
			t.Run(name, func(t *testing.T) {
				tt.data.Lang = lang
				var buf bytes.Buffer
				if err := Render(&buf, tt.page, tt.data); err != nil {
					t.Fatal(err)
				}
				golden(t, name, buf.Bytes())
			})
		}
	}
}

// TestPagesEveryLanguage renders every page in every language: the html
// element carries the language, and no English is left in the others.
func TestPagesEveryLanguage(t *testing.T) {
	english := []string{"Estimated wait", "people", "hours", "in line", "waiting room", "Starts in", "come back", "Checking",
		"Joining", "calculation", "Working", "turn it on"}
	for _, lang := range Languages() {
		for _, tt := range pageStates() {
			t.Run(lang+"/"+tt.name, func(t *testing.T) {
				tt.data.Lang = lang
				var buf bytes.Buffer
				if err := Render(&buf, tt.page, tt.data); err != nil {
					t.Fatal(err)
				}
				page := buf.String()
				if !strings.Contains(page, `<html lang="`+lang+`">`) {
					t.Errorf("no <html lang=%q>", lang)
				}
				if text := visibleText(page); strings.ContainsAny(text, "{}") {
					t.Errorf("placeholder left in the page: %s", text)
				}
				if lang == "en-US" {
					return
				}
				for _, s := range english {
					if strings.Contains(page, s) {
						t.Errorf("%s page contains English %q", lang, s)
					}
				}
			})
		}
	}
}

// visibleText is page without its style, script and data- attributes,
// where placeholders are kept for the script.
func visibleText(page string) string {
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?s)<style>.*?</style>`),
		regexp.MustCompile(`(?s)<script[^>]*>.*?</script>`),
		regexp.MustCompile(` data-[a-z-]+="[^"]*"`),
	} {
		page = re.ReplaceAllString(page, "")
	}
	return page
}

// TestPagesInIframe: nothing in the pages breaks out of a frame.
func TestPagesInIframe(t *testing.T) {
	for _, tt := range pageStates() {
		var buf bytes.Buffer
		if err := Render(&buf, tt.page, tt.data); err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"top.location", "window.top", "parent.", "self !== top", "frame-ancestors", "X-Frame-Options"} {
			if strings.Contains(buf.String(), bad) {
				t.Errorf("%s contains %q", tt.name, bad)
			}
		}
	}
	w := httptest.NewRecorder()
	Default().AssetHandler().ServeHTTP(w, httptest.NewRequest("GET", "/usher.svg", nil))
	if h := w.Header().Get("X-Frame-Options"); h != "" {
		t.Errorf("assets set X-Frame-Options %q", h)
	}
}

func TestPrequeuePageContent(t *testing.T) {
	var pd PageData
	for _, tt := range pageStates() {
		if tt.page == PagePrequeue {
			pd = tt.data
		}
	}
	var buf bytes.Buffer
	if err := Render(&buf, PagePrequeue, pd); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{
		`<meta http-equiv="refresh" content="20">`,
		"Spring &lt;Sale&gt; launch starts at 2026-03-14 17:14 UTC.",
		`<time datetime="2026-03-14T17:14:00Z">2026-03-14 17:14 UTC</time>`,
		`data-local="datetime" data-at="2026-03-14T17:14:00Z" data-label="Your time: {time}" hidden`,
		`id="countdown" data-seconds="7474"`,
		">2 hours 5 minutes<",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	pd.EventName = ""
	pd.LastUpdated = pd.EventStart.Add(time.Second)
	buf.Reset()
	if err := Render(&buf, PagePrequeue, pd); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"The event starts at", `data-seconds="0"`, ">Starting now<"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("started event: page lacks %q", want)
		}
	}
}

func TestWaitingPageContent(t *testing.T) {
	room := &usher.Room{ID: "sale", Name: "Spring <Sale>"}
	d := usher.Decision{Outcome: usher.Wait, Position: 12, WaitKnown: true, EstimatedWait: 150 * time.Second,
		RefreshAfter: 19500 * time.Millisecond, Stats: usher.RoomStats{AdmittedLastMinute: 4}}
	var buf bytes.Buffer
	if err := Render(&buf, PageWaiting, NewPageData(room, d, at)); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{
		`<meta http-equiv="refresh" content="20">`,
		"You are number 12 in line",
		"11 people are ahead of you",
		`<html lang="en-US">`,
		"about 3 minutes",
		"Spring &lt;Sale&gt;",
		`aria-valuenow="29"`,
		`<time id="updated" datetime="2026-03-14T15:09:26Z" data-local="time" data-at="2026-03-14T15:09:26Z">15:09:26 UTC</time>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"<Sale>", "http://", "https://", "@import", "fonts."} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
}

func TestNewPageData(t *testing.T) {
	room := &usher.Room{ID: "r", Settings: usher.Settings{RefreshInterval: 15 * time.Second}}
	pd := NewPageData(room, usher.Decision{Position: 1, WaitKnown: true, EstimatedWait: 10 * time.Second}, at)
	if pd.RoomName != "r" || pd.QueueingMethod != "fifo" || pd.RefreshSeconds != 15 || pd.PeopleAhead != 0 ||
		pd.WaitMinutes != 1 || pd.WaitSeconds != 10 || pd.WaitFormatted() != "1 minute" || pd.WaitText() != "about 1 minute" || pd.Progress != Nearness(10) ||
		pd.Lang != "en-US" {
		t.Errorf("NewPageData = %+v", pd)
	}
	pd = NewPageData(room, usher.Decision{Position: 0}, at)
	if pd.WaitText() != "We are working out your wait" || pd.WaitFormatted() != "" || pd.PeopleAhead != 0 {
		t.Errorf("unknown wait: %+v", pd)
	}
	room.DefaultTemplateLanguage = "de"
	pd = NewPageData(room, usher.Decision{Position: 2, WaitKnown: true, EstimatedWait: 61 * time.Minute}, at)
	if pd.Lang != "de-DE" || pd.WaitFormatted() != "1 Stunde 1 Minute" || pd.WaitText() != "etwa 1 Stunde 1 Minute" {
		t.Errorf("room default de: lang %q, %q, %q", pd.Lang, pd.WaitFormatted(), pd.WaitText())
	}
	random := &usher.Room{ID: "r", Settings: usher.Settings{QueueingMethod: usher.Random}}
	pd = NewPageData(random, usher.Decision{WaitKnown: true, EstimatedWait: 10 * time.Minute}, at)
	pd.WaitLow, pd.WaitHigh = 5, 15
	if !pd.HasRange() || pd.WaitFormatted() != "between 5 and 15 minutes" || pd.WaitText() != "between 5 and 15 minutes" {
		t.Errorf("random range: %q, %q", pd.WaitFormatted(), pd.WaitText())
	}
	pd.WaitKnown = false
	if pd.HasRange() || pd.WaitFormatted() != "" {
		t.Errorf("range shown for an unknown wait")
	}
}

func TestRefreshSeconds(t *testing.T) {
	tests := []struct {
		after, fallback time.Duration
		want            int
	}{
		{20 * time.Second, 0, 20},
		{19001 * time.Millisecond, 0, 20},
		{0, 7 * time.Second, 7},
		{0, 0, 20},
		{time.Millisecond, 0, 1},
	}
	for _, tt := range tests {
		if got := RefreshSeconds(tt.after, tt.fallback); got != tt.want {
			t.Errorf("RefreshSeconds(%v, %v) = %d, want %d", tt.after, tt.fallback, got, tt.want)
		}
	}
}

func TestNearness(t *testing.T) {
	tests := []struct {
		seconds int64
		want    float64
	}{{-1, 0}, {0, 1}, {60, 0.5}, {180, 0.25}, {600, 1.0 / 11}}
	for _, tt := range tests {
		if got := Nearness(tt.seconds); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Nearness(%d) = %v, want %v", tt.seconds, got, tt.want)
		}
	}
	room := &usher.Room{ID: "r"}
	for _, tt := range []struct {
		d    usher.Decision
		want int
	}{
		{usher.Decision{Position: 4, WaitKnown: true, EstimatedWait: 150 * time.Second}, 29},
		{usher.Decision{Position: 1, WaitKnown: true}, 100},
		{usher.Decision{Position: 4, EstimatedWait: time.Minute}, 0}, // not known
	} {
		if got := NewPageData(room, tt.d, at).ProgressPercent(); got != tt.want {
			t.Errorf("%+v: progress %d %%, want %d %%", tt.d, got, tt.want)
		}
	}
}

func TestRenderUnknownPage(t *testing.T) {
	var buf bytes.Buffer
	if err := Render(&buf, "nope", PageData{}); err == nil || buf.Len() != 0 {
		t.Errorf("err = %v, wrote %d bytes", err, buf.Len())
	}
}

func TestOverrideFolder(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "reject.html"), `<p>closed: {{.RoomName}}</p>`)
	mustWrite(t, filepath.Join(dir, "assets", "logo.txt"), "custom logo")
	p, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := p.Render(&buf, PageReject, PageData{RoomName: "<b>"}); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "<p>closed: &lt;b&gt;</p>" {
		t.Errorf("override = %q", buf.String())
	}
	buf.Reset()
	if err := p.Render(&buf, PageWaiting, PageData{RefreshSeconds: 5}); err != nil || !strings.Contains(buf.String(), `content="5"`) {
		t.Errorf("embedded waiting page not kept: %v", err)
	}
	h := http.StripPrefix("/a/", p.AssetHandler())
	for path, want := range map[string]int{"/a/logo.txt": 200, "/a/usher.svg": 200, "/a/": 404, "/a/../web.go": 404, "/a/missing": 404} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != want {
			t.Errorf("GET %s = %d, want %d", path, w.Code, want)
		}
	}
}

func TestOverrideBrokenTemplate(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "waiting.html"), `{{.Nope}}`)
	if _, err := New(dir); err == nil {
		t.Error("New accepted a template that fails to render")
	}
	mustWrite(t, filepath.Join(dir, "waiting.html"), `{{if}}`)
	if _, err := New(dir); err == nil {
		t.Error("New accepted a template that does not parse")
	}
}

func TestAssetHandlerEmbedded(t *testing.T) {
	w := httptest.NewRecorder()
	Default().AssetHandler().ServeHTTP(w, httptest.NewRequest("GET", "/usher.svg", nil))
	if w.Code != 200 || w.Header().Get("Content-Type") != "image/svg+xml" || !strings.Contains(w.Body.String(), "<svg") {
		t.Errorf("got %d %q", w.Code, w.Header().Get("Content-Type"))
	}
	w = httptest.NewRecorder()
	Default().AssetHandler().ServeHTTP(w, httptest.NewRequest("POST", "/usher.svg", nil))
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d", w.Code)
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
