package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/usherhq/usher/internal/admin"
	"github.com/usherhq/usher/internal/bench"
)

// chromium is Debian's browser, which make deps installs.
const chromium = "/usr/bin/chromium"

// dashboardPNG, when set, is where TestE2EDashboardChromium saves a
// screenshot of the dashboard under load (docs/img/dashboard.png):
//
//	USHER_DASHBOARD_PNG=$PWD/docs/img/dashboard.png go test -count=1 -run TestE2EDashboardChromium ./cmd/usher
const dashboardPNG = "USHER_DASHBOARD_PNG"

// dashboardConfig: "sale" takes the load, with an event running; "quiet"
// has room to spare and an event to come, and is the one switched to
// queue_all.
const dashboardConfig = `listen: %[1]s
admin:
  listen: %[2]s
  tokens:
    - {name: ops, token: %[3]s, role: write}
    - {name: viewer, token: %[4]s, role: read}
store:
  embedded:
    path: %[5]s
rooms:
  - id: sale
    name: Seal Brewing spring sale
    origin: %[6]s
    routes:
      - path: /
    cookie_suffix: sale
    total_active_users: 8
    new_users_per_minute: 40
    session_duration: 12s
    refresh_interval: 2s
    json_response_enabled: true
    events:
      - name: Spring drop
        event_start_time: %[7]s
        event_end_time: %[8]s
        total_active_users: 8
  - id: quiet
    name: Members' corner
    origin: %[6]s
    routes:
      - path: /members
    cookie_suffix: quiet
    total_active_users: 1000
    new_users_per_minute: 1000
    json_response_enabled: true
    events:
      - name: Members' preview
        prequeue_start_time: %[9]s
        event_start_time: %[10]s
        event_end_time: %[11]s
`

// startDashboardChromium starts headless Chromium with the flags of
// internal/web's browser tests and a fresh profile. It fails the test
// (never skips it) when the browser cannot run.
func startDashboardChromium(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("%s: %v (make deps installs the chromium package)", chromium, err)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", chromium, err)
	}
	return bctx
}

// requestLog records every request a tab sends.
type requestLog struct {
	mu   sync.Mutex
	reqs []*network.Request
}

func (l *requestLog) listen(ctx context.Context) {
	_ = chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			l.mu.Lock()
			l.reqs = append(l.reqs, e.Request)
			l.mu.Unlock()
		}
	})
}

func (l *requestLog) all() []*network.Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*network.Request(nil), l.reqs...)
}

// waitUntil evaluates expr in the tab every 100 ms until it is true, for
// at most d.
func waitUntil(t *testing.T, tab context.Context, d time.Duration, expr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, d)
	defer cancel()
	var last error
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("not true within %v: %s (last error: %v)", d, expr, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// eval evaluates expr in the tab.
func eval[T any](t *testing.T, tab context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(tab, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// newVisitorWaits reports whether a new visitor (no cookie) to path on the
// public listener is told to wait.
func newVisitorWaits(t *testing.T, pub, path string) bool {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+pub+path, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		W struct {
			InWaitingRoom bool `json:"inWaitingRoom"`
		} `json:"usherWaitingRoom"`
	}
	if resp.Header.Get("Content-Type") == "application/json" || strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		_ = json.NewDecoder(resp.Body).Decode(&doc)
	}
	return doc.W.InWaitingRoom
}

func login(t *testing.T, tab context.Context, token string) {
	t.Helper()
	eval[string](t, tab, `document.getElementById("token").value = ""`)
	if err := chromedp.Do(tab,
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#login-submit")),
	); err != nil {
		t.Fatal(err)
	}
}

// TestE2EDashboardChromium runs the dashboard of the real binary in real
// headless Chromium while virtual visitors load a room: a wrong token is
// refused; with the write token the room's charts fill (active, admissions
// and waiting above zero, one point a second); the running and the next
// event show; a limit the API refuses shows its error naming the field
// and changes nothing; queue_all switched on from the keyboard and
// confirmed makes the next new visitor of that room wait; suspended
// switched on with the mouse lets them pass; a read token sees every
// control disabled. No request carries a token in its URL or
// leaves the admin listener.
func TestE2EDashboardChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	const writeTok, readTok, wrongTok = "dash-write-5f1c9a0e", "dash-read-77b2c4d1", "dash-wrong-0000"
	origin := httptest.NewServer(bench.NewOrigin("dashboard shop"))
	t.Cleanup(origin.Close)
	dir := t.TempDir()
	pub, adm := freeAddr(t), freeAddr(t)
	now := time.Now().UTC()
	ts := func(d time.Duration) string { return now.Add(d).Truncate(time.Second).Format(time.RFC3339) }
	cfg := fmt.Sprintf(dashboardConfig, pub, adm, writeTok, readTok, filepath.Join(dir, "data"), origin.URL,
		ts(-time.Minute), ts(2*time.Hour), ts(3*time.Hour), ts(4*time.Hour), ts(5*time.Hour))
	path := filepath.Join(dir, "usher.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	startUsher(t, path, pub, "sale")
	base := "http://" + adm

	bctx := startDashboardChromium(t)
	tab, cancelTab := chromedp.NewContext(bctx)
	defer cancelTab()
	var reqs requestLog
	reqs.listen(tab)
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}

	// A wrong token is refused at the login.
	login(t, tab, wrongTok)
	waitUntil(t, tab, 10*time.Second, `document.getElementById("login-error").textContent === "The token was refused."`)
	if eval[bool](t, tab, `!document.getElementById("dash").hidden`) {
		t.Fatal("the dashboard shows after a wrong token")
	}

	login(t, tab, writeTok)
	waitUntil(t, tab, 10*time.Second, `!!document.querySelector('[data-room="sale"]') && !!document.querySelector('[data-room="quiet"]')`)
	if eval[string](t, tab, `document.getElementById("token").value`) != "" {
		t.Fatal("the token stays in the login field")
	}

	// The load: two new visitors a second for a sale room of 8 at 40 a
	// minute, for as long as the test runs.
	loadCtx, stopLoad := context.WithCancel(context.Background())
	loadDone := make(chan struct{})
	defer func() { stopLoad(); <-loadDone }()
	go func() {
		defer close(loadDone)
		arr, _ := bench.ParseArrivals("steady:2/s@3m")
		_, _ = bench.Run(loadCtx, bench.Config{
			Target:   "http://" + pub + "/",
			Arrivals: arr,
			Seed:     7,
			Model: bench.VisitorModel{
				Browse:          bench.Uniform(4*time.Second, 10*time.Second),
				RequestEvery:    bench.Uniform(time.Second, 2*time.Second),
				AbandonFraction: 0.1,
				Patience:        bench.Uniform(20*time.Second, 60*time.Second),
			},
			Horizon: 3 * time.Minute,
		})
	}()
	loadStart := time.Now()

	// The charts fill: at least 20 snapshots, the room full (8 active),
	// admissions counted and a queue.
	const fill = `(function () {
		var r = document.querySelector('[data-room="sale"]');
		function s(chart) { return +r.querySelector('svg[data-chart="' + chart + '"]').dataset.samples; }
		function line(chart, key) { return r.querySelector('svg[data-chart="' + chart + '"] polyline[data-series="' + key + '"]'); }
		return s("active") >= 20 && s("admissions") >= 20 && s("waiting") >= 20 &&
			+line("active", "active").dataset.max >= 8 && +line("admissions", "adm").dataset.max >= 8 &&
			+line("waiting", "waiting").dataset.max >= 3 && +line("active", "tau").dataset.max === 8 &&
			+line("admissions", "nupm").dataset.max === 40;
	})()`
	waitUntil(t, tab, 90*time.Second, fill)
	t.Logf("charts filled %v after the load began", time.Since(loadStart).Round(time.Second))
	points := eval[int](t, tab, `document.querySelector('[data-room="sale"] svg[data-chart="waiting"] polyline').points.numberOfItems`)
	if points < 20 {
		t.Fatalf("the waiting chart draws %d points", points)
	}
	if txt := eval[string](t, tab, `document.querySelector('[data-room="sale"] .event').textContent`); !strings.HasPrefix(txt, "Event “Spring drop” running until ") {
		t.Errorf("sale's event line: %q", txt)
	}
	if txt := eval[string](t, tab, `document.querySelector('[data-room="quiet"] .event').textContent`); !strings.HasPrefix(txt, "Next event: “Members' preview”, ") || !strings.Contains(txt, "pre-queue from") {
		t.Errorf("quiet's event line: %q", txt)
	}

	// The wait percentiles show what the analytics endpoint answers: its
	// points with admissions, or "no wait data yet" when it has none (or
	// is not there). The page reads it every 30 s: wait until the two agree.
	agree := func() (bool, string) {
		q := "?from=" + time.Now().UTC().Add(-30*time.Minute).Format(time.RFC3339) + "&step=minute"
		areq, _ := http.NewRequest("GET", base+"/api/v1/rooms/sale/analytics"+q, nil)
		areq.Header.Set("Authorization", "Bearer "+readTok)
		aresp, err := http.DefaultClient.Do(areq)
		if err != nil {
			t.Fatal(err)
		}
		defer aresp.Body.Close()
		var rep struct {
			Points []struct {
				W *struct {
					Count *int `json:"count"`
				} `json:"queue_wait_seconds"`
			} `json:"points"`
		}
		data := 0
		switch aresp.StatusCode {
		case http.StatusServiceUnavailable:
			// A node that keeps no analytics: the page says it cannot
			// read them.
			state := eval[string](t, tab, `(function () {
				var s = document.querySelector('[data-room="sale"] svg[data-chart="wait"]');
				return s.dataset.state + " " + s.textContent; })()`)
			return strings.HasPrefix(state, "error wait data unavailable: "), fmt.Sprintf("API 503; page %q", state)
		case http.StatusNotFound:
		case http.StatusOK:
			if err := json.NewDecoder(aresp.Body).Decode(&rep); err != nil {
				t.Fatal(err)
			}
			for _, p := range rep.Points {
				if p.W != nil && (p.W.Count == nil || *p.W.Count > 0) {
					data++
				}
			}
		default:
			t.Fatalf("analytics: %d", aresp.StatusCode)
		}
		state := eval[string](t, tab, `(function () {
			var s = document.querySelector('[data-room="sale"] svg[data-chart="wait"]');
			return s.dataset.state + " " + s.dataset.samples + " " + s.textContent; })()`)
		if data == 0 {
			return strings.HasPrefix(state, "none 0 no wait data yet"), fmt.Sprintf("API %d, no points with admissions; page %q", aresp.StatusCode, state)
		}
		return strings.HasPrefix(state, fmt.Sprintf("data %d ", data)), fmt.Sprintf("API %d points with admissions; page %q", data, state)
	}
	for deadline := time.Now().Add(45 * time.Second); ; {
		ok, what := agree()
		if ok {
			t.Logf("wait percentiles: %s", what)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the wait chart does not show what the API answers: %s", what)
		}
		time.Sleep(time.Second)
	}

	if p := os.Getenv(dashboardPNG); p != "" {
		// A picture of a minute and a half of load.
		waitUntil(t, tab, 2*time.Minute, `+document.querySelector('[data-room="sale"] svg[data-chart="active"]').dataset.samples >= 90`)
		png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d bytes)", p, len(png))
	}

	// A limit the API refuses: its error, naming the field, in the dialog;
	// nothing changes.
	eval[string](t, tab, `document.getElementById("room-sale-total_active_users").value = ""`)
	if err := chromedp.Do(tab,
		chromedp.SendKeys(chromedp.CSS("#room-sale-total_active_users"), "0"),
		chromedp.Click(chromedp.CSS(`[data-room="sale"] [data-apply="total_active_users"]`)),
	); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, tab, 10*time.Second, `document.getElementById("confirm").open`)
	if got := eval[string](t, tab, `Array.prototype.map.call(document.querySelectorAll("#confirm-rows tr:only-child > *"), function (c) { return c.textContent; }).join(" ")`); got != "total_active_users 8 0" {
		t.Errorf("the dialog shows %q", got)
	}
	if note := eval[string](t, tab, `document.getElementById("confirm-note").textContent`); !strings.Contains(note, "Spring drop") {
		t.Errorf("the dialog does not say the running event sets the limit: %q", note)
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS("#confirm-apply"))); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, tab, 10*time.Second, `document.getElementById("confirm-error").textContent.indexOf("Field total_active_users: ") >= 0`)
	t.Logf("refused: %s", eval[string](t, tab, `document.getElementById("confirm-error").textContent`))
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS("#confirm-cancel"))); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, tab, 5*time.Second, `!document.getElementById("confirm").open`)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := admin.NewClient(adm, readTok)
	if v, err := client.Room(ctx, "sale"); err != nil || v.Settings["total_active_users"] != 8.0 || len(v.Overrides) != 0 {
		t.Fatalf("sale after a refused change: %v, %+v", err, v)
	}

	// queue_all on "quiet", from the keyboard: Enter on the button opens the
	// dialog with the focus on Cancel; Tab, Enter applies.
	if newVisitorWaits(t, pub, "/members") {
		t.Fatal("a new visitor of quiet waits before queue_all")
	}
	if err := chromedp.Do(tab, chromedp.Focus(chromedp.CSS(`[data-room="quiet"] [data-control="queue_all"]`)), chromedp.KeyEvent("\r")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, tab, 10*time.Second, `document.getElementById("confirm").open && document.activeElement.id === "confirm-cancel"`)
	if got := eval[string](t, tab, `Array.prototype.map.call(document.querySelectorAll("#confirm-rows tr:only-child > *"), function (c) { return c.textContent; }).join(" ")`); got != "queue_all false true" {
		t.Fatalf("the dialog shows %q", got)
	}
	if err := chromedp.Do(tab, chromedp.KeyEvent("\t")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, tab, 5*time.Second, `document.activeElement.id === "confirm-apply"`)
	if err := chromedp.Do(tab, chromedp.KeyEvent("\r")); err != nil {
		t.Fatal(err)
	}
	applied := time.Now()
	waitUntil(t, tab, 10*time.Second, `!document.getElementById("confirm").open`)
	if !newVisitorWaits(t, pub, "/members") {
		t.Fatal("the next new visitor of quiet does not wait after queue_all was applied")
	}
	t.Logf("a new visitor waits %v after Apply", time.Since(applied).Round(time.Millisecond))
	waitUntil(t, tab, 5*time.Second, `(function () {
		var r = document.querySelector('[data-room="quiet"]');
		return r.querySelector('[data-control="queue_all"]').getAttribute("aria-pressed") === "true" &&
			r.querySelector(".badge.queue-all") !== null && document.activeElement === r.querySelector('[data-control="queue_all"]'); })()`)
	au, err := client.Audit(ctx, "quiet", 10, 0)
	if err != nil || len(au.Entries) != 1 || au.Entries[0].Token != "ops" || au.Entries[0].After.(map[string]any)["queue_all"] != true {
		t.Fatalf("quiet's audit log: %v %+v", err, au)
	}

	// Suspended, with the mouse: the room is off, its visitors pass
	// (queue_all or not).
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`[data-room="quiet"] [data-control="suspended"]`))); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, tab, 10*time.Second, `document.getElementById("confirm").open`)
	if got := eval[string](t, tab, `Array.prototype.map.call(document.querySelectorAll("#confirm-rows tr:only-child > *"), function (c) { return c.textContent; }).join(" ")`); got != "suspended false true" {
		t.Fatalf("the dialog shows %q", got)
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS("#confirm-apply"))); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, tab, 10*time.Second, `!document.getElementById("confirm").open`)
	if newVisitorWaits(t, pub, "/members") {
		t.Fatal("a new visitor of quiet waits after suspended was applied")
	}
	waitUntil(t, tab, 5*time.Second, `(function () {
		var r = document.querySelector('[data-room="quiet"]');
		return r.querySelector('[data-control="suspended"]').getAttribute("aria-pressed") === "true" &&
			r.querySelector(".badge.suspended") !== null && r.querySelector(".badge.queue-all") !== null; })()`)

	// A read token: every control disabled, and the note says why.
	rtab, cancelR := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	defer cancelR()
	var rreqs requestLog
	rreqs.listen(rtab)
	if err := chromedp.Do(rtab, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	login(t, rtab, readTok)
	waitUntil(t, rtab, 10*time.Second, `!!document.querySelector('[data-room="quiet"] svg[data-chart="active"]') &&
		+document.querySelector('[data-room="quiet"] svg[data-chart="active"]').dataset.samples > 0`)
	if !eval[bool](t, rtab, `(function () {
		var c = document.querySelectorAll("[data-room] :is(button, input):not(.ro-ok)");
		for (var i = 0; i < c.length; i++) { if (!c[i].disabled) { return false; } }
		return c.length === 12 && !document.getElementById("readonly").hidden; })()`) {
		t.Fatal("a read token's controls are not all disabled")
	}

	// On a phone's width nothing overflows sideways.
	if err := chromedp.Do(rtab, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, rtab, 5*time.Second, `document.documentElement.scrollWidth <= document.documentElement.clientWidth`)

	// No token in any URL; every request to the admin listener; the
	// stream and the writes carry the token in the Authorization header.
	var live, patch int
	for _, r := range append(reqs.all(), rreqs.all()...) {
		for _, tok := range []string{writeTok, readTok, wrongTok} {
			if strings.Contains(r.URL, tok) || strings.Contains(r.URLFragment, tok) {
				t.Errorf("a token in the URL %s", r.URL)
			}
		}
		if !strings.HasPrefix(r.URL, base+"/") && !strings.HasPrefix(r.URL, "data:") {
			t.Errorf("a request outside the admin listener: %s", r.URL)
		}
		auth, _ := r.Headers["Authorization"].(string)
		switch {
		case r.URL == base+"/api/v1/live":
			live++
			if auth != "Bearer "+writeTok && auth != "Bearer "+readTok {
				t.Errorf("the stream without the token in its header: %q", auth)
			}
		case r.Method == "PATCH":
			patch++
			if auth != "Bearer "+writeTok || r.Headers["If-Match"] == nil {
				t.Errorf("a PATCH with Authorization %q, If-Match %v", auth, r.Headers["If-Match"])
			}
		}
	}
	if live < 2 || patch != 3 {
		t.Errorf("%d stream requests, %d PATCHes; want 2 and 3", live, patch)
	}
}
