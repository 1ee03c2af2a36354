package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admin"
	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/store/local"
)

// historyConfig is one room, whose analytics the test writes before
// usher starts.
const historyConfig = `listen: %[1]s
admin:
  listen: %[2]s
  tokens:
    - {name: ops, token: %[3]s, role: write}
store:
  embedded:
    path: %[4]s
rooms:
  - id: sale
    origin: %[5]s
    routes:
      - path: /
    total_active_users: 8
    new_users_per_minute: 40
    json_response_enabled: true
`

// The seeded minutes' figures: larger than anything the idle room shows
// live, so that a chart whose largest value is one of them drew it.
const (
	seedPeakWaiting = 777
	seedPeakActive  = 333
	seedAdmissions  = 55
)

// seedAnalytics writes, into the embedded store at data, the room's
// analytics of the minutes from 50 to 5 minutes before now, as a node
// would have flushed them: seedPeakWaiting waiters at the peak 20 minutes
// ago, seedPeakActive active users 30 minutes ago, seedAdmissions
// admissions 40 minutes ago, smaller figures in the other minutes.
func seedAnalytics(t *testing.T, data, room string, now time.Time) {
	t.Helper()
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := local.Open(local.Options{Path: filepath.Join(data, storeFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var deltas []usher.AnalyticsDelta
	base := now.UTC().Truncate(time.Minute)
	for m := 50; m >= 5; m-- {
		pw, pa, adm := int64(100+m), int64(50+m), int64(10)
		switch m {
		case 20:
			pw = seedPeakWaiting
		case 30:
			pa = seedPeakActive
		case 40:
			adm = seedAdmissions
		}
		deltas = append(deltas, usher.AnalyticsDelta{
			Minute: base.Add(-time.Duration(m) * time.Minute),
			Add:    map[string]int64{"arr": adm + 5, "adm": adm},
			Max:    map[string]int64{"pw": pw, "pa": pa},
		})
	}
	if err := st.AddAnalytics(context.Background(), room, deltas); err != nil {
		t.Fatal(err)
	}
}

// TestE2EDashboardOpensWithHistory: the dashboard's charts open with the
// last hour of the room's analytics, written before the tab (and usher)
// started, and go on live. Before, they started empty: only the seconds
// since the tab opened were drawn. Then Queue all, switched on and back
// off, leaves no runtime value: the room follows its file again (it once
// pinned queue_all: false over the file).
func TestE2EDashboardOpensWithHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	const tok = "hist-write-3a9c51d0"
	origin := httptest.NewServer(bench.NewOrigin("history shop"))
	t.Cleanup(origin.Close)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	seedAnalytics(t, data, "sale", time.Now())
	pub, adm := freeAddr(t), freeAddr(t)
	path := filepath.Join(dir, "usher.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, historyConfig, pub, adm, tok, data, origin.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	startUsher(t, path, pub, "sale")

	bctx := startDashboardChromium(t)
	tab, cancelTab := chromedp.NewContext(bctx)
	defer cancelTab()
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 900), chromedp.Navigate("http://"+adm+"/")); err != nil {
		t.Fatal(err)
	}
	opened := time.Now()
	login(t, tab, tok)
	chart := func(name string) string {
		return `document.querySelector('[data-room="sale"] svg[data-chart="` + name + `"]')`
	}
	line := func(name, key string) string {
		return chart(name) + `.querySelector('polyline[data-series="` + key + `"]')`
	}
	// The 46 seeded minutes are drawn before the first snapshots, their
	// peaks with them.
	waitUntil(t, tab, 30*time.Second, fmt.Sprintf(`(function () {
		var w = %s, a = %s, d = %s;
		return !!w && !!a && !!d && +w.dataset.history === 46 && +a.dataset.history === 46 && +d.dataset.history === 46;
	})()`, chart("waiting"), chart("active"), chart("admissions")))
	for _, c := range []struct {
		chart, series string
		want          int
	}{
		{"waiting", "waiting", seedPeakWaiting},
		{"active", "active", seedPeakActive},
		{"admissions", "adm", seedAdmissions},
	} {
		if got := eval[int](t, tab, `+`+line(c.chart, c.series)+`.dataset.max`); got != c.want {
			t.Errorf("%s chart: largest %s drawn %d, want the seeded %d", c.chart, c.series, got, c.want)
		}
	}
	first := time.UnixMilli(int64(eval[float64](t, tab, `+`+chart("waiting")+`.dataset.first`)))
	if ago := opened.Sub(first); ago < 45*time.Minute || ago > 51*time.Minute {
		t.Errorf("the waiting chart starts %v before the tab opened, want the seeded 49 minutes (the end of the minute 50 minutes ago)", ago.Round(time.Second))
	}
	// And it goes on live: snapshots are added after the history.
	n := eval[int](t, tab, `+`+chart("waiting")+`.dataset.samples`)
	waitUntil(t, tab, 15*time.Second, fmt.Sprintf(`+%s.dataset.samples >= %d && +%s.dataset.history === 46`, chart("waiting"), n+3, chart("waiting")))

	// Queue all on, then off: the second change drops the override.
	client := admin.NewClient(adm, tok)
	for i, want := range []bool{true, false} {
		if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`[data-room="sale"] [data-control="queue_all"]`))); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, tab, 10*time.Second, `document.getElementById("confirm").open`)
		if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS("#confirm-apply"))); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, tab, 10*time.Second, `!document.getElementById("confirm").open`)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		v, err := client.Room(ctx, "sale")
		cancel()
		_, pinned := v.Overrides["queue_all"]
		if err != nil || v.Settings["queue_all"] != want || pinned != (i == 0) {
			t.Fatalf("after switch %d: %v, queue_all %v (want %v), overrides %v", i+1, err, v.Settings["queue_all"], want, v.Overrides)
		}
		waitUntil(t, tab, 5*time.Second, fmt.Sprintf(`document.querySelector('[data-room="sale"] [data-control="queue_all"]').getAttribute("aria-pressed") === "%v"`, want))
	}
}
