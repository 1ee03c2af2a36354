package gate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/draw"
	"github.com/usherhq/usher/internal/gate"
)

// chromium is Debian's browser, which make deps installs.
const chromium = "/usr/bin/chromium"

// TestDrawsVerifyPageChromium: the page /__usher/draws/<room>/verify,
// in a real Chromium, recomputes a room's revealed shuffle and lottery
// epoch with WebCrypto and says they match; served the same draws with
// one entry moved, it says they do not, naming the shuffle.
func TestDrawsVerifyPageChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("%s: %v (make deps installs the chromium package)", chromium, err)
	}
	now := time.Now().Truncate(time.Second)
	start := now.Add(time.Minute)
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	room := testRoom("shop")
	room.QueueingMethod = usher.Random
	room.Events = []usher.Event{{Name: "drop", PrequeueStart: now.Add(-time.Minute), Start: start,
		End: start.Add(time.Hour), ShuffleAtStart: true, DrawBeacon: "round 42"}}
	g, _ := featureGate(t, room, now, func(o *gate.Options) { o.Now = func() time.Time { return time.Unix(0, clock.Load()) } })
	for range 40 {
		g.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "http://shop.test/", nil))
	}
	clock.Store(start.Add(time.Second).UnixNano())
	var tamper atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !tamper.Load() || r.URL.Path != "/__usher/draws/shop" {
			g.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, r)
		var pub draw.Room
		if err := json.Unmarshal(rec.Body.Bytes(), &pub); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		o := pub.Draws[0].Order
		e := o[30]
		pub.Draws[0].Order = slices.Insert(slices.Delete(slices.Clone(o), 30, 31), 5, e)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(pub)
	}))
	t.Cleanup(srv.Close)
	// The draws served are what the browser will check: a revealed shuffle
	// of the 40 and a lottery epoch with a revealed window.
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, httptest.NewRequest("GET", "http://shop.test/__usher/draws/shop", nil))
	var pub draw.Room
	if err := json.Unmarshal(rec.Body.Bytes(), &pub); err != nil || len(pub.Draws) < 2 || len(pub.Draws[0].Order) != 40 ||
		!pub.Draws[1].Revealed || len(pub.Draws[1].Windows) == 0 {
		t.Fatalf("draws served: %v %s", err, bytes.TrimSpace(rec.Body.Bytes()))
	}

	bctx := startChromium(t)
	check := func(name string) (status string, items []string) {
		t.Helper()
		tab, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
		defer cancel()
		ctx, cancelT := context.WithTimeout(tab, 60*time.Second)
		defer cancelT()
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/__usher/draws/shop/verify")); err != nil {
			t.Fatalf("%s: navigate: %v", name, err)
		}
		for {
			done, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("status").dataset.done || ""`))
			if err == nil && done != "" {
				status, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("status").className + ": " + document.getElementById("status").textContent`))
				items, _ = chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#draws li"), (li) => li.className + ": " + li.textContent)`))
				return status, items
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: the page did not finish checking: %v", name, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	status, items := check("honest")
	if !strings.HasPrefix(status, "ok: All") || len(items) != len(pub.Draws) {
		t.Fatalf("honest draws: %s\n%s", status, strings.Join(items, "\n"))
	}
	for _, it := range items[:2] {
		if !strings.HasPrefix(it, "ok: ") || !strings.Contains(it, ": verified") {
			t.Fatalf("honest draw: %s", it)
		}
	}
	tamper.Store(true)
	status, items = check("moved")
	if !strings.HasPrefix(status, "bad: MISMATCH") || !strings.Contains(items[0], "out of place") || !strings.HasPrefix(items[1], "ok: ") {
		t.Fatalf("one entry moved: %s\n%s", status, strings.Join(items, "\n"))
	}
	t.Logf("honest: %s; moved: %s", strings.Join(items[1:], "; "), items[0])
}

// startChromium starts a headless Chromium with a fresh profile.
func startChromium(t *testing.T) context.Context {
	t.Helper()
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
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
