package web_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/gate"
	"github.com/usherhq/usher/internal/store/local"
	"github.com/usherhq/usher/internal/ticket"
	"github.com/usherhq/usher/internal/web"
)

// The screenshots in the README and docs/waiting-page.md:
//
//	go test ./internal/web -run TestLivePageChromium -args -live.shots=$PWD/docs
var liveShots = flag.String("live.shots", "", "TestLivePageChromium: write waiting-page.png and waiting-page-mobile.png to this folder")

// liveSession is the session of the room in TestLivePageChromium: short,
// so that the line moves twice in a few seconds, long enough to see the
// page at each place.
const liveSession = 6 * time.Second

// hit is one request a tab made to the gate.
type hit struct {
	at, answered time.Time
	json         bool
	refresh      int // the answer's Refresh header (0: none, the origin answered)
}

// liveStack is the real gate (engine, embedded store in memory, ticket
// ring) in front of a test origin, with a record of the requests of each
// tab (the ?tab= of the URL).
type liveStack struct {
	gate, origin *httptest.Server
	mu           sync.Mutex
	hits         map[string][]hit
	inside       map[string]int // origin requests per tab
}

func newLiveStack(t *testing.T) *liveStack {
	t.Helper()
	s := &liveStack{hits: map[string][]hit{}, inside: map[string]int{}}
	s.origin = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.inside[r.URL.Query().Get("tab")]++
		s.mu.Unlock()
		w.Header().Set("X-Origin", "1")
		io.WriteString(w, `<!doctype html><html lang="en"><title>Seal Brewing shop</title><h1 id="inside">Welcome to the shop</h1></html>`)
	}))
	t.Cleanup(s.origin.Close)
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key, err := ticket.GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	ring, err := ticket.NewRing([]usher.Key{key})
	if err != nil {
		t.Fatal(err)
	}
	room := &usher.Room{ID: "sale", Name: "Seal Brewing spring sale", Origin: s.origin.URL,
		Routes: []usher.Route{{Path: "/"}}, Settings: usher.Settings{
			TotalActiveUsers: 1, NewUsersPerMinute: 100, SessionDuration: liveSession, DisableSessionRenewal: true,
			RefreshInterval: 2 * time.Second, JSONResponseEnabled: true,
		}}
	// A room that answers no JSON and lets nobody in for now.
	plain := &usher.Room{ID: "plain", Name: "Plain", Origin: s.origin.URL, Routes: []usher.Route{{Path: "/plain"}},
		Settings: usher.Settings{TotalActiveUsers: 1, NewUsersPerMinute: 100, SessionDuration: liveSession,
			RefreshInterval: 2 * time.Second, QueueAll: true}}
	g, err := gate.New(gate.Options{Rooms: []*usher.Room{room, plain}, Decider: admission.New(st, admission.Options{}), Sealer: ring})
	if err != nil {
		t.Fatal(err)
	}
	s.gate = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := hit{at: time.Now(), json: strings.Contains(r.Header.Get("Accept"), "json")}
		g.ServeHTTP(w, r)
		h.answered = time.Now()
		h.refresh, _ = strconv.Atoi(w.Header().Get("Refresh"))
		if r.URL.Path == "/" || r.URL.Path == "/plain" {
			s.mu.Lock()
			tab := r.URL.Query().Get("tab")
			s.hits[tab] = append(s.hits[tab], h)
			s.mu.Unlock()
		}
	}))
	t.Cleanup(s.gate.Close)
	return s
}

// tabHits returns the requests of tab so far.
func (s *liveStack) tabHits(tab string) []hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]hit(nil), s.hits[tab]...)
}

// pageLoads counts the page loads (not JSON) of tab.
func (s *liveStack) pageLoads(tab string) int {
	n := 0
	for _, h := range s.tabHits(tab) {
		if !h.json {
			n++
		}
	}
	return n
}

// visitor is a JSON client with its own cookies, as an app would be.
type visitor struct {
	c   *http.Client
	url string
}

func newVisitor(url string) *visitor {
	jar, _ := cookiejar.New(nil)
	return &visitor{c: &http.Client{Jar: jar, Timeout: 10 * time.Second}, url: url}
}

// get checks in once: admitted, or the position and when to come back.
func (v *visitor) get() (admitted bool, position int64, refresh time.Duration, err error) {
	req, _ := http.NewRequest(http.MethodGet, v.url, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := v.c.Do(req)
	if err != nil {
		return false, 0, time.Second, err
	}
	defer resp.Body.Close()
	if resp.Header.Get("X-Origin") == "1" {
		return true, 0, 0, nil
	}
	var doc struct {
		W struct {
			Position int64 `json:"position"`
			Refresh  int   `json:"refreshIntervalSeconds"`
		} `json:"usherWaitingRoom"`
	}
	err = json.NewDecoder(resp.Body).Decode(&doc)
	return false, doc.W.Position, time.Duration(doc.W.Refresh) * time.Second, err
}

// evalUntil evaluates expr in the tab until it is true or ctx ends;
// errors while the page navigates are retried.
func evalUntil(ctx context.Context, expr string) error {
	var last error
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not true before the deadline (last error: %v)", expr, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pageState is what the live tab shows.
type pageState struct {
	Heading string `json:"heading"`
	Title   string `json:"title"`
	Status  string `json:"status"`
	Wait    string `json:"wait"`
	Bar     string `json:"bar"`
	Probe   bool   `json:"probe"`
}

const readState = `({heading: document.getElementById("heading").textContent, title: document.title,
	status: document.getElementById("status").textContent, wait: document.getElementById("wait").textContent,
	bar: document.getElementById("progress").getAttribute("aria-valuenow"), probe: window.usherProbe === 1})`

// notifyLog wraps the page's Notification so that every notification the
// page makes is also written to sessionStorage, which outlives the reload
// into the site.
const notifyLog = `(function () {
	var Real = window.Notification;
	if (!Real) { return; }
	function N(title, opts) {
		var log = JSON.parse(sessionStorage.getItem("notes") || "[]");
		log.push(title);
		sessionStorage.setItem("notes", JSON.stringify(log));
		return new Real(title, opts);
	}
	N.requestPermission = function (cb) { return Real.requestPermission(cb); };
	Object.defineProperty(N, "permission", { get: function () { return Real.permission; } });
	window.Notification = N;
})();`

// TestLivePageChromium runs the waiting page in real headless Chromium
// behind the real gate and engine: a room of one, full; a JSON visitor
// waits first, the browser second. The page must show its place falling
// (heading, title, the screen readers' sentence) without reloading, check
// in exactly when each answer says, and go into the site by itself when
// its turn comes, notifying the visitor who asked. Without JavaScript the
// page still shows its place and checks in by meta refresh; in a room
// without JSON the script reloads at each check-in; with
// prefers-reduced-motion the bar neither creeps nor animates. At 390x844,
// in every language, nothing overflows sideways.
func TestLivePageChromium(t *testing.T) {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	bctx := web.StartChromium(t)
	s := newLiveStack(t)

	// A is let in and fills the room; B waits first.
	a, b := newVisitor(s.gate.URL+"/?tab=a"), newVisitor(s.gate.URL+"/?tab=b")
	if in, _, _, err := a.get(); !in || err != nil {
		t.Fatalf("the first visitor was not let in: %v", err)
	}
	if in, pos, _, err := b.get(); in || pos != 1 || err != nil {
		t.Fatalf("the second visitor: admitted %v, position %d, %v; want waiting first", in, pos, err)
	}
	bIn := make(chan time.Time, 1)
	go func() {
		for ctx.Err() == nil {
			in, _, refresh, err := b.get()
			if err != nil {
				refresh = time.Second
			}
			if in {
				bIn <- time.Now()
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(refresh):
			}
		}
	}()

	// C, the browser, is third in the room: second in line, so it arrives
	// in a later second than B (the line counts arrivals by the second).
	nextSecond()
	tab, cancelTab := chromedp.NewContext(bctx)
	defer cancelTab()
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1000, 820)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(tab, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: notifyLog}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.CallBrowser(tab, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "notifications"}, Setting: browser.PermissionSettingGranted, Origin: s.gate.URL,
	}); err != nil {
		t.Fatal(err)
	}
	live, cancelLive := context.WithCancel(tab)
	defer cancelLive()
	go func() { <-ctx.Done(); cancelLive() }()
	loaded := time.Now()
	if err := chromedp.Do(live, chromedp.Navigate(s.gate.URL+"/?tab=live")); err != nil {
		t.Fatal(err)
	}
	t.Logf("page loaded in %v", time.Since(loaded).Round(time.Millisecond))
	st, err := chromedp.Run(live, chromedp.Evaluate[pageState](readState))
	if err != nil {
		t.Fatal(err)
	}
	if st.Heading != "You are number 2 in line" || st.Title != "Number 2 in line · Seal Brewing spring sale" {
		t.Fatalf("first page: %+v", st)
	}
	// The probe lives as long as the page is not reloaded.
	if _, err := chromedp.Run(live, chromedp.Evaluate[int](`window.usherProbe = 1`)); err != nil {
		t.Fatal(err)
	}

	t.Run("keyboard asks for notifications", func(t *testing.T) {
		if err := evalUntil(live, `!document.getElementById("notify-box").hidden`); err != nil {
			t.Fatal(err)
		}
		// Tab from the top of the page reaches the button; Enter presses it.
		for i := 0; i < 10; i++ {
			id, err := chromedp.Run(live, chromedp.Evaluate[string](`document.activeElement ? document.activeElement.id : ""`))
			if err != nil {
				t.Fatal(err)
			}
			if id == "notify" {
				break
			}
			if err := chromedp.Do(live, chromedp.KeyEvent("\t")); err != nil {
				t.Fatal(err)
			}
		}
		outline, err := chromedp.Run(live, chromedp.Evaluate[string](`document.activeElement.id === "notify" ? getComputedStyle(document.activeElement).outlineStyle : "not focused"`))
		if err != nil || outline != "solid" {
			t.Fatalf("notification button by keyboard: outline %q, %v", outline, err)
		}
		if err := chromedp.Do(live, chromedp.KeyEvent("\r")); err != nil {
			t.Fatal(err)
		}
		if err := evalUntil(live, `document.getElementById("notify").getAttribute("aria-pressed") === "true" &&
			document.getElementById("notify-status").textContent === "You will get a notification when your turn is near."`); err != nil {
			t.Fatal(err)
		}
	})

	if *liveShots != "" {
		shoot(t, live, filepath.Join(*liveShots, "waiting-page.png"))
	}

	t.Run("without JavaScript", func(t *testing.T) {
		noJS, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext()) // its own cookies: a fourth visitor
		nextSecond()
		defer cancel()
		if err := chromedp.Do(noJS, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
			return err
		}), chromedp.Navigate(s.gate.URL+"/?tab=nojs")); err != nil {
			t.Fatal(err)
		}
		text, err := chromedp.Run(noJS, chromedp.Evaluate[string](`document.body.innerText`))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"You are number 3 in line", "2 people are ahead of you.", "This page checks again every 2 seconds by itself."} {
			if !strings.Contains(text, want) {
				t.Errorf("page without JavaScript lacks %q:\n%s", want, text)
			}
		}
		if strings.Contains(text, "Notify me") {
			t.Errorf("page without JavaScript shows the notification button")
		}
		wctx, cancelWait := context.WithTimeout(ctx, 6*time.Second)
		defer cancelWait()
		for s.pageLoads("nojs") < 2 && wctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
		hits := s.tabHits("nojs")
		if len(hits) < 2 || hits[1].json {
			t.Fatalf("page without JavaScript: requests %+v, want a second page load by meta refresh", hits)
		}
		gap := hits[1].at.Sub(hits[0].answered)
		t.Logf("without JavaScript: reloaded %v after the first answer (Refresh: %d)", gap.Round(time.Millisecond), hits[0].refresh)
		if gap < time.Duration(hits[0].refresh)*time.Second || gap > time.Duration(hits[0].refresh)*time.Second+3*time.Second {
			t.Errorf("meta refresh after %v, want %d s", gap, hits[0].refresh)
		}
	})

	t.Run("reduced motion", func(t *testing.T) {
		tab, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext()) // another visitor, behind
		defer cancel()
		if err := chromedp.Do(tab, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-reduced-motion", Value: "reduce"}}})
			return err
		}), chromedp.Navigate(s.gate.URL+"/?tab=reduce")); err != nil {
			t.Fatal(err)
		}
		got, err := chromedp.Run(tab, chromedp.Evaluate[string](`(function () {
			var bar = document.getElementById("progress");
			return bar.className + " " + getComputedStyle(bar.firstElementChild).transitionDuration;
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		if got != "bar 0s" {
			t.Errorf("with prefers-reduced-motion the bar is %q, want no creep and no transition (\"bar 0s\")", got)
		}
	})

	t.Run("room without JSON", func(t *testing.T) {
		tab, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
		defer cancel()
		if err := chromedp.Do(tab, chromedp.Navigate(s.gate.URL+"/plain?tab=plain")); err != nil {
			t.Fatal(err)
		}
		wctx, cancelWait := context.WithTimeout(ctx, 8*time.Second)
		defer cancelWait()
		for s.pageLoads("plain") < 3 && wctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
		hits := s.tabHits("plain")
		if len(hits) < 3 {
			t.Fatalf("room without JSON: %d requests, want the page reloaded at each check-in", len(hits))
		}
		for i, h := range hits[1:] {
			gap, want := h.at.Sub(hits[i].answered), time.Duration(hits[i].refresh)*time.Second
			t.Logf("room without JSON: reload %d came %v after an answer that said %v", i+1, gap.Round(time.Millisecond), want)
			if h.json || gap < want || gap > want+3*time.Second {
				t.Errorf("room without JSON: request %d (json %v) came %v after an answer that said %v", i+1, h.json, gap, want)
			}
		}
	})

	t.Run("390x844", func(t *testing.T) {
		if err := chromedp.Do(live, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)); err != nil {
			t.Fatal(err)
		}
		checkNoOverflow(t, live, "live page")
		if *liveShots != "" {
			shoot(t, live, filepath.Join(*liveShots, "waiting-page-mobile.png"))
		}
		if err := chromedp.Do(live, chromedp.EmulateViewport(1000, 820)); err != nil {
			t.Fatal(err)
		}
		// Every language, with long words and large numbers.
		static := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			room := &usher.Room{ID: "r", Name: "Internationale Gartenbauausstellungseröffnungsveranstaltung"}
			pd := web.NewPageData(room, usher.Decision{Outcome: usher.Wait, Position: 123456, WaitKnown: true,
				EstimatedWait: 187 * time.Minute, Stats: usher.RoomStats{Waiting: 250000}}, time.Now())
			pd.Lang = r.URL.Query().Get("lang")
			if err := web.Render(w, web.PageWaiting, pd); err != nil {
				http.Error(w, err.Error(), 500)
			}
		}))
		defer static.Close()
		mobile, cancel := chromedp.NewContext(bctx)
		defer cancel()
		if err := chromedp.Do(mobile, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)); err != nil {
			t.Fatal(err)
		}
		for _, lang := range web.Languages() {
			if err := chromedp.Do(mobile, chromedp.Navigate(static.URL+"/?lang="+lang)); err != nil {
				t.Fatal(err)
			}
			checkNoOverflow(t, mobile, lang)
		}
	})

	// A's session ends; B goes in at its next check-in; the page shows
	// first place at its own next check-in, without a reload.
	var bAt time.Time
	select {
	case bAt = <-bIn:
		t.Logf("the visitor ahead went in %v after the start", bAt.Sub(begin).Round(time.Millisecond))
	case <-ctx.Done():
		t.Fatal("the visitor ahead never went in")
	}
	if err := evalUntil(live, `document.getElementById("heading").textContent === "You are next in line"`); err != nil {
		t.Fatal(err)
	}
	st, err = chromedp.Run(live, chromedp.Evaluate[pageState](readState))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first in line %v after the start: %+v", time.Since(begin).Round(time.Millisecond), st)
	if st.Title != "Number 1 in line · Seal Brewing spring sale" || !strings.HasPrefix(st.Status, "You are next in line. Estimated wait: ") || !st.Probe {
		t.Errorf("first in line: %+v (probe false: the page was reloaded)", st)
	}
	if n := s.pageLoads("live"); n != 1 {
		t.Errorf("the page was loaded %d times before its turn, want once", n)
	}

	// B's session ends; the page's next check-in lets it in, and it loads
	// the site by itself.
	if err := evalUntil(live, `!!document.getElementById("inside")`); err != nil {
		t.Fatal(err)
	}
	t.Logf("inside the site %v after the start, %v after the visitor ahead", time.Since(begin).Round(time.Millisecond), time.Since(bAt).Round(time.Millisecond))
	notes, err := chromedp.Run(live, chromedp.Evaluate[string](`sessionStorage.getItem("notes") || "[]"`))
	if err != nil {
		t.Fatal(err)
	}
	if notes != `["Your turn is near","It is your turn"]` {
		t.Errorf("notifications %s, want near the front, then the turn", notes)
	}

	// Every check-in came when the answer before it said, never earlier
	// (an early one changes nothing) and not much later; then the check-in
	// that let it in, and one page load into the site.
	hits := s.tabHits("live")
	checkIns := 0
	for i := 1; i < len(hits); i++ {
		prev, h := hits[i-1], hits[i]
		if prev.refresh == 0 {
			if h.json || i != len(hits)-1 {
				t.Errorf("request %d after the site's answer: %+v", i, h)
			}
			continue
		}
		if !h.json {
			t.Errorf("request %d is a page load before the turn came", i)
		}
		checkIns++
		gap, want := h.at.Sub(prev.answered), time.Duration(prev.refresh)*time.Second
		if gap < want || gap > want+3*time.Second {
			t.Errorf("check-in %d came %v after an answer that said %v", i, gap.Round(time.Millisecond), want)
		}
	}
	s.mu.Lock()
	inside := s.inside["live"]
	s.mu.Unlock()
	t.Logf("%d check-ins, %d page loads, %d requests reached the site", checkIns, s.pageLoads("live"), inside)
	if n := s.pageLoads("live"); n != 2 || inside != 2 || hits[len(hits)-1].refresh != 0 {
		t.Errorf("page loads %d (want 2: the waiting page, then the site), requests at the site %d (want 2: the admitting check-in, the page)", n, inside)
	}
	t.Logf("TestLivePageChromium took %v", time.Since(begin).Round(time.Millisecond))
}

// nextSecond sleeps into the next second: a visitor arriving then is
// behind the ones before.
func nextSecond() {
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
}

// checkNoOverflow fails when the page in tab is wider than its viewport.
func checkNoOverflow(t *testing.T, tab context.Context, name string) {
	t.Helper()
	type widths struct {
		Scroll int `json:"scroll"`
		Client int `json:"client"`
	}
	w, err := chromedp.Run(tab, chromedp.Evaluate[widths](`({scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth})`))
	if err != nil {
		t.Fatal(err)
	}
	if w.Scroll > w.Client || w.Client != 390 {
		t.Errorf("%s at 390x844: scrollWidth %d, clientWidth %d", name, w.Scroll, w.Client)
	}
}

// shoot writes a PNG screenshot of the tab's viewport to path.
func shoot(t *testing.T, tab context.Context, path string) {
	t.Helper()
	png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}
