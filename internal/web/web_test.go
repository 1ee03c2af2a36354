package web

import (
	"bytes"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

func TestPagesGolden(t *testing.T) {
	room := &usher.Room{ID: "sale", Name: "Spring <Sale>", Settings: usher.Settings{RefreshInterval: 20 * time.Second}}
	random := &usher.Room{ID: "drop", Settings: usher.Settings{QueueingMethod: usher.Random}}
	tests := []struct {
		name string
		page string
		room *usher.Room
		d    usher.Decision
	}{
		{"waiting_fifo.html", PageWaiting, room, usher.Decision{Outcome: usher.Wait, Position: 12, WaitKnown: true,
			EstimatedWait: 150 * time.Second, RefreshAfter: 19500 * time.Millisecond,
			Stats: usher.RoomStats{Waiting: 40, AdmittedLastMinute: 4}}},
		{"waiting_unknown.html", PageWaiting, room, usher.Decision{Outcome: usher.Wait, Position: 1}},
		{"waiting_random.html", PageWaiting, random, usher.Decision{Outcome: usher.Wait, Position: 3, WaitKnown: true,
			EstimatedWait: 2 * time.Hour, RefreshAfter: 30 * time.Second, Stats: usher.RoomStats{Waiting: 250, AdmittedLastMinute: 50}}},
		{"waiting_queue_all.html", PageWaiting, room, usher.Decision{Outcome: usher.Wait, Position: 2, QueueAll: true}},
		{"reject.html", PageReject, room, usher.Decision{Outcome: usher.Turn}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Render(&buf, tt.page, NewPageData(tt.room, tt.d, at)); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, buf.Bytes())
		})
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
		"about 3 minutes",
		"Spring &lt;Sale&gt;",
		`aria-valuenow="25"`,
		`<time datetime="2026-03-14T15:09:26Z">15:09:26 UTC</time>`,
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
		pd.WaitMinutes != 1 || pd.WaitFormatted != "1 minute" || pd.WaitText() != "about 1 minute" || pd.Progress != 0 {
		t.Errorf("NewPageData = %+v", pd)
	}
	pd = NewPageData(room, usher.Decision{Position: 0}, at)
	if pd.WaitText() != "we are working out your wait" || pd.WaitFormatted != "" || pd.PeopleAhead != 0 {
		t.Errorf("unknown wait: %+v", pd)
	}
}

func TestFormatMinutes(t *testing.T) {
	for n, want := range map[int64]string{0: "less than a minute", 1: "1 minute", 3: "3 minutes", 60: "1 hour",
		61: "1 hour 1 minute", 125: "2 hours 5 minutes", 120: "2 hours"} {
		if got := FormatMinutes(n); got != want {
			t.Errorf("FormatMinutes(%d) = %q, want %q", n, got, want)
		}
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

func TestProgress(t *testing.T) {
	tests := []struct {
		admitted, n int64
		want        float64
	}{{0, 5, 0}, {10, 0, 1}, {10, 10, 0.5}, {1, 3, 0.25}, {-1, 3, 0}}
	for _, tt := range tests {
		if got := Progress(tt.admitted, tt.n); got != tt.want {
			t.Errorf("Progress(%d, %d) = %v, want %v", tt.admitted, tt.n, got, tt.want)
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
