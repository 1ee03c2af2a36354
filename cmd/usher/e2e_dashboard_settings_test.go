package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/usherhq/usher/internal/admin"
	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/notify"
)

// dashboardSettingsPNG, when set, is where TestE2EDashboardSettings saves
// a screenshot of the settings editor (docs/img/dashboard-settings.png).
const dashboardSettingsPNG = "USHER_DASHBOARD_SETTINGS_PNG"

// settingsConfig: one room that queues everybody (queue_all), so that a
// bypass rule shows at once.
const settingsConfig = `listen: %[1]s
admin:
  listen: %[2]s
  tokens:
    - {name: ops, token: %[3]s, role: write}
    - {name: viewer, token: %[4]s, role: read}
store:
  embedded:
    path: %[5]s
rooms:
  - id: shop
    name: Seal Brewing shop
    origin: %[6]s
    routes:
      - path: /
    total_active_users: 5
    new_users_per_minute: 60
    session_duration: 5m
    queue_all: true
    json_response_enabled: true
`

// hookDelivery is one webhook delivery a receiver got.
type hookDelivery struct {
	sigOK bool
	path  string
	event struct {
		Type string `json:"type"`
		Room string `json:"room"`
		Data struct {
			Action string `json:"action"`
			Token  string `json:"token"`
		} `json:"data"`
	}
}

// hookReceiver is a real HTTP receiver of webhooks that checks each
// delivery's signature with secret.
type hookReceiver struct {
	srv    *httptest.Server
	secret string
	mu     sync.Mutex
	got    []hookDelivery
}

func newHookReceiver(t *testing.T, secret string) *hookReceiver {
	h := &hookReceiver{secret: secret}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		d := hookDelivery{path: r.URL.Path}
		d.sigOK = notify.Verify([]byte(h.secret), r.Header.Get(notify.HeaderSignature), body, time.Now(), 5*time.Minute) == nil
		_ = json.Unmarshal(body, &d.event)
		h.mu.Lock()
		h.got = append(h.got, d)
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// find returns the first delivery of a settings change with action.
func (h *hookReceiver) find(action string) (hookDelivery, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range h.got {
		if d.event.Type == "room.settings_changed" && d.event.Data.Action == action {
			return d, true
		}
	}
	return hookDelivery{}, false
}

// typeInto replaces a field's text with text, typed.
func typeInto(t *testing.T, tab context.Context, sel, text string) {
	t.Helper()
	eval[bool](t, tab, `(function () { var c = document.querySelector(`+jsString(sel)+`); c.value = ""; return true; })()`)
	if err := chromedp.Do(tab, chromedp.SendKeys(chromedp.CSS(sel), text)); err != nil {
		t.Fatalf("type into %s: %v", sel, err)
	}
}

func click(t *testing.T, tab context.Context, sel string) {
	t.Helper()
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
}

func compactJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// dialogRows returns the confirmation dialog's rows, "field: before -> after".
func dialogRows(t *testing.T, tab context.Context) []string {
	t.Helper()
	waitUntil(t, tab, 10*time.Second, `document.getElementById("confirm").open`)
	return eval[[]string](t, tab, `Array.prototype.map.call(document.querySelectorAll("#confirm-rows tr"), function (tr) {
		return tr.cells[0].textContent + ": " + tr.cells[1].textContent + " -> " + tr.cells[2].textContent; })`)
}

// confirmApply checks the dialog shows want (in order), applies, and
// waits until it closes (a success).
func confirmApply(t *testing.T, tab context.Context, want ...string) {
	t.Helper()
	if got := dialogRows(t, tab); !slices.Equal(got, want) {
		t.Fatalf("the dialog shows %q, want %q", got, want)
	}
	click(t, tab, "#confirm-apply")
	settled(t, tab)
}

// settled waits until the dialog closes after Apply (failing on a
// refusal) and the room it changed is read and drawn again.
func settled(t *testing.T, tab context.Context) {
	t.Helper()
	waitUntil(t, tab, 10*time.Second, `!document.getElementById("confirm").open || document.getElementById("confirm-error").textContent !== ""`)
	if msg := eval[string](t, tab, `document.getElementById("confirm-error").textContent`); msg != "" {
		t.Fatalf("refused: %s", msg)
	}
	waitUntil(t, tab, 10*time.Second, `!document.querySelector('[aria-busy="true"]')`)
}

// until polls cond (an API check) every 100 ms for at most d.
func until(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not within %v: %s", d, what)
		}
	}
}

// TestE2EDashboardSettings drives the room editor of the real binary's
// dashboard in real headless Chromium, by clicks and typing only, and
// checks each change through the API and on the public listener: a bad
// value shows the API's error naming the field and changes nothing; a
// new session_duration and queueing_method are in force; a webhook set
// in the editor (its secret never shown) gets a signed delivery of the
// next change; an event created is listed and in force, then edited and
// deleted; a bypass rule lets a request through the queue, is disabled
// and deleted; the room is reset to the file; the audit view lists every
// change. A read token's editor is disabled, and a write it forces shows
// the API's 403.
func TestE2EDashboardSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	const writeTok, readTok = "dash-set-write-2b7e11", "dash-set-read-9c3d02"
	const hookSecret = "dash-hook-secret-5e8f0a1b2c"
	origin := httptest.NewServer(bench.NewOrigin("settings shop"))
	t.Cleanup(origin.Close)
	recv := newHookReceiver(t, hookSecret)
	dir := t.TempDir()
	pub, adm := freeAddr(t), freeAddr(t)
	path := filepath.Join(dir, "usher.yaml")
	cfg := fmt.Sprintf(settingsConfig, pub, adm, writeTok, readTok, filepath.Join(dir, "data"), origin.URL)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	startUsher(t, path, pub, "shop")
	base := "http://" + adm
	client := admin.NewClient(adm, readTok)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	room := func() admin.RoomView {
		t.Helper()
		v, err := client.Room(ctx, "shop")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	started := time.Now()

	bctx := startDashboardChromium(t)
	tab, cancelTab := chromedp.NewContext(bctx)
	defer cancelTab()
	var reqs requestLog
	reqs.listen(tab)
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 1000), chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	login(t, tab, writeTok)
	waitUntil(t, tab, 15*time.Second, `!!document.querySelector('[data-room="shop"] details[data-panel="settings"]')`)
	click(t, tab, `[data-room="shop"] details[data-panel="settings"] > summary`)
	waitUntil(t, tab, 10*time.Second, `!!document.getElementById("s-shop-limits-total_active_users") && !document.querySelector('[aria-busy="true"]')`)
	if got := eval[string](t, tab, `document.querySelector('[data-overrides] .note').textContent`); !strings.HasPrefix(got, "None") {
		t.Errorf("overrides before any change: %q", got)
	}

	// A bad value: the API's error, naming the field; nothing changes,
	// and the value in force shown stays.
	typeInto(t, tab, "#s-shop-limits-total_active_users", "0")
	click(t, tab, `[data-group="limits"] [data-apply-group="limits"]`)
	if got := dialogRows(t, tab); !slices.Equal(got, []string{"total_active_users: 5 -> 0"}) {
		t.Fatalf("the dialog shows %q", got)
	}
	click(t, tab, "#confirm-apply")
	waitUntil(t, tab, 10*time.Second, `document.getElementById("confirm-error").textContent.indexOf("Field total_active_users: ") >= 0`)
	t.Logf("refused: %s", eval[string](t, tab, `document.getElementById("confirm-error").textContent`))
	click(t, tab, "#confirm-cancel")
	waitUntil(t, tab, 5*time.Second, `!document.getElementById("confirm").open`)
	if got := eval[string](t, tab, `document.querySelector('[data-group="limits"] [data-now="total_active_users"]').textContent`); got != "in force: 5" {
		t.Errorf("after the refusal the form shows %q as in force", got)
	}
	if v := room(); v.Settings["total_active_users"] != 5.0 || len(v.Overrides) != 0 || v.Version != 0 {
		t.Fatalf("after a refused change: total_active_users %v, overrides %v, version %d", v.Settings["total_active_users"], v.Overrides, v.Version)
	}

	// session_duration, typed; queueing_method, chosen from the keyboard.
	// The room changed by someone else while the dialog is open: Apply
	// sends the ETag read before, and the API's 412 is shown; nothing
	// changes. Reload, and the same change goes through.
	typeInto(t, tab, "#s-shop-session-session_duration", "7m")
	click(t, tab, `[data-apply-group="session"]`)
	if got := dialogRows(t, tab); !slices.Equal(got, []string{`session_duration: "5m" -> "7m"`}) {
		t.Fatalf("the dialog shows %q", got)
	}
	if _, err := admin.NewClient(adm, writeTok).PatchRoom(ctx, "shop", room().ETag, map[string]any{"disable_session_renewal": true}); err != nil {
		t.Fatal(err)
	}
	click(t, tab, "#confirm-apply")
	waitUntil(t, tab, 10*time.Second, `document.getElementById("confirm-error").textContent.indexOf("changed since that ETag") >= 0`)
	t.Logf("stale: %s", eval[string](t, tab, `document.getElementById("confirm-error").textContent`))
	if v := room(); v.Settings["session_duration"] != "5m" || v.Settings["disable_session_renewal"] != true {
		t.Fatalf("after a stale change: %v", v.Settings)
	}
	click(t, tab, "#confirm-cancel")
	click(t, tab, `[data-room="shop"] [data-reload]`)
	waitUntil(t, tab, 10*time.Second, `!document.querySelector('[aria-busy="true"]') &&
		document.querySelector('[data-group="session"] [data-now="disable_session_renewal"]').textContent.indexOf("in force: true") === 0 &&
		document.getElementById("s-shop-session-session_duration").value === "5m"`)
	typeInto(t, tab, "#s-shop-session-session_duration", "7m")
	click(t, tab, `[data-apply-group="session"]`)
	confirmApply(t, tab, `session_duration: "5m" -> "7m"`)
	until(t, 10*time.Second, "session_duration 7m in the API", func() bool { return room().Settings["session_duration"] == "7m" })
	waitUntil(t, tab, 10*time.Second, `!!document.querySelector('[data-override="session_duration"]') &&
		document.querySelector('[data-group="session"] [data-now="session_duration"]').textContent.indexOf('in force: "7m"') === 0`)
	if err := chromedp.Do(tab, chromedp.Focus(chromedp.CSS("#s-shop-queueing-queueing_method")), chromedp.SendKeys(chromedp.CSS("#s-shop-queueing-queueing_method"), "random")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, tab, 5*time.Second, `document.getElementById("s-shop-queueing-queueing_method").value === "random"`)
	click(t, tab, `[data-apply-group="queueing"]`)
	confirmApply(t, tab, `queueing_method: "fifo" -> "random"`)
	until(t, 10*time.Second, "queueing_method random in the API", func() bool { return room().Settings["queueing_method"] == "random" })

	// A block not in force: Apply with nothing filled in changes nothing;
	// a difficulty typed turns proof of work on, the block sent whole.
	click(t, tab, `[data-apply-group="proof_of_work"]`)
	waitUntil(t, tab, 5*time.Second, `document.querySelector("[data-manage-msg]").textContent === "Proof of work: nothing changed."`)
	typeInto(t, tab, "#s-shop-proof_of_work-difficulty", "4")
	click(t, tab, `[data-apply-group="proof_of_work"]`)
	confirmApply(t, tab, "proof_of_work.difficulty: (not set) -> 4")
	until(t, 10*time.Second, "proof_of_work in the API", func() bool {
		return compactJSON(room().Settings["proof_of_work"]) == `{"always":false,"difficulty":4}`
	})
	// Its Reset in the overrides: back to the file's (none).
	waitUntil(t, tab, 10*time.Second, `!!document.querySelector('[data-override="proof_of_work"] button')`)
	click(t, tab, `[data-override="proof_of_work"] button`)
	confirmApply(t, tab, `proof_of_work: {"always":false,"difficulty":4} -> (not set)`)
	until(t, 10*time.Second, "no proof_of_work in the API", func() bool {
		v := room()
		_, on := v.Settings["proof_of_work"]
		_, over := v.Overrides["proof_of_work"]
		return !on && !over
	})

	// A webhook: its secret typed, never shown back; the next change is
	// delivered to it, signed.
	waitUntil(t, tab, 10*time.Second, `!!document.querySelector('[data-group="webhooks"] [data-add-hook]')`)
	click(t, tab, `[data-group="webhooks"] [data-add-hook]`)
	typeInto(t, tab, "#s-shop-hook0-name", "ops")
	typeInto(t, tab, "#s-shop-hook0-url", recv.srv.URL+"/hook/PATH-TOKEN")
	typeInto(t, tab, "#s-shop-hook0-secret", hookSecret)
	typeInto(t, tab, "#s-shop-hook0-events", "room.settings_changed")
	click(t, tab, `[data-apply-group="webhooks"]`)
	rows := dialogRows(t, tab)
	if len(rows) != 1 || strings.Contains(rows[0], hookSecret) || !strings.Contains(rows[0], `"secret":"(set)"`) {
		t.Fatalf("the webhook's dialog shows %q", rows)
	}
	confirmApply(t, tab, rows...)
	until(t, 10*time.Second, "the webhook in the API", func() bool {
		h, _ := room().Settings["webhooks"].([]any)
		return len(h) == 1 && h[0].(map[string]any)["name"] == "ops"
	})
	waitUntil(t, tab, 10*time.Second, `document.getElementById("s-shop-hook0-url").value.indexOf("/…") > 0 && document.getElementById("s-shop-hook0-secret").value === ""`)
	if eval[bool](t, tab, `(function () {
		var s = `+jsString(hookSecret)+`, c = document.querySelectorAll("input, textarea");
		for (var i = 0; i < c.length; i++) { if (c[i].value.indexOf(s) >= 0) { return true; } }
		return document.documentElement.outerHTML.indexOf(s) >= 0 || document.body.innerText.indexOf("PATH-TOKEN") >= 0; })()`) {
		t.Fatal("the page shows the webhook's secret or its URL's path after it was set")
	}
	// Edited as shown (URL as scheme and host, secret empty): its URL and
	// secret are kept (the delivery below reaches the path, signed).
	typeInto(t, tab, "#s-shop-hook0-events", "room.settings_changed, queueing.*")
	click(t, tab, `[data-apply-group="webhooks"]`)
	rows = dialogRows(t, tab)
	if len(rows) != 1 || !strings.Contains(rows[0], `"events":["room.settings_changed","queueing.*"]`) {
		t.Fatalf("the webhook's dialog shows %q", rows)
	}
	confirmApply(t, tab, rows...)
	until(t, 10*time.Second, "the webhook's new events in the API", func() bool {
		h, _ := room().Settings["webhooks"].([]any)
		return len(h) == 1 && len(h[0].(map[string]any)["events"].([]any)) == 2
	})

	// Advanced, the room as JSON: retyped with one value changed, only that
	// field is sent (the webhooks, shown with "(set)" and "/…", are not).
	click(t, tab, `[data-room="shop"] details.advanced > summary`)
	waitUntil(t, tab, 5*time.Second, `document.querySelector('[data-room="shop"] details.advanced').open`)
	var settings map[string]any
	if err := json.Unmarshal([]byte(eval[string](t, tab, `document.getElementById("s-shop-json-settings").value`)), &settings); err != nil {
		t.Fatal(err)
	}
	if settings["refresh_interval"] != "20s" || !strings.Contains(compactJSON(settings["webhooks"]), `"secret":"(set)"`) {
		t.Fatalf("the JSON shows %v", settings)
	}
	settings["refresh_interval"] = "10s"
	typeInto(t, tab, "#s-shop-json-settings", compactJSON(settings))
	click(t, tab, `[data-apply-group="json"]`)
	confirmApply(t, tab, `refresh_interval: "20s" -> "10s"`)
	until(t, 10*time.Second, "refresh_interval 10s in the API", func() bool { return room().Settings["refresh_interval"] == "10s" })

	// An event, typed in: listed, and in force (running, its limit applied).
	click(t, tab, `[data-room="shop"] details[data-panel="events"] > summary`)
	waitUntil(t, tab, 10*time.Second, `!!document.getElementById("s-shop-event-name") && !document.querySelector('[aria-busy="true"]')`)
	now := time.Now().UTC()
	typeInto(t, tab, "#s-shop-event-name", "Flash sale")
	typeInto(t, tab, "#s-shop-event-event_start_time", now.Add(-time.Minute).Truncate(time.Second).Format(time.RFC3339))
	typeInto(t, tab, "#s-shop-event-event_end_time", now.Add(time.Hour).Truncate(time.Second).Format(time.RFC3339))
	typeInto(t, tab, "#s-shop-event-total_active_users", "3")
	click(t, tab, `[data-submit="event"]`)
	if got := dialogRows(t, tab); len(got) != 5 || got[0] != `name: (not set) -> "Flash sale"` {
		t.Fatalf("the event's dialog shows %q", got)
	}
	click(t, tab, "#confirm-apply")
	settled(t, tab)
	until(t, 10*time.Second, "the event running with total_active_users 3", func() bool {
		st, err := client.Status(ctx)
		return err == nil && len(st.Rooms) == 1 && st.Rooms[0].Phase == "event" && st.Rooms[0].Event == "Flash sale" && st.Rooms[0].TotalActiveUsers == 3
	})
	waitUntil(t, tab, 10*time.Second, `(function () { var r = document.querySelector('[data-event="Flash sale"] [data-state]'); return !!r && r.textContent === "running"; })()`)
	// The webhook got the event's creation, signed with its secret.
	until(t, 15*time.Second, "a delivery of event.create", func() bool { _, ok := recv.find("event.create"); return ok })
	if d, _ := recv.find("event.create"); !d.sigOK || d.path != "/hook/PATH-TOKEN" || d.event.Room != "shop" || d.event.Data.Token != "ops" {
		t.Fatalf("the delivery of event.create: %+v", d)
	}

	// Edited: its limit 4; then deleted.
	click(t, tab, `[data-event="Flash sale"] button[aria-label="Edit event Flash sale"]`)
	waitUntil(t, tab, 5*time.Second, `document.getElementById("s-shop-event-total_active_users").value === "3"`)
	typeInto(t, tab, "#s-shop-event-total_active_users", "4")
	click(t, tab, `[data-submit="event"]`)
	confirmApply(t, tab, "total_active_users: 3 -> 4")
	until(t, 10*time.Second, "the event's limit 4", func() bool {
		st, err := client.Status(ctx)
		return err == nil && st.Rooms[0].TotalActiveUsers == 4
	})
	waitUntil(t, tab, 10*time.Second, `!!document.querySelector('[data-event="Flash sale"] button[aria-label="Delete event Flash sale"]')`)
	click(t, tab, `[data-event="Flash sale"] button[aria-label="Delete event Flash sale"]`)
	if got := dialogRows(t, tab); len(got) != 1 || !strings.HasPrefix(got[0], "event Flash sale: {") || !strings.HasSuffix(got[0], "-> (not set)") {
		t.Fatalf("the delete dialog shows %q", got)
	}
	click(t, tab, "#confirm-apply")
	settled(t, tab)
	until(t, 10*time.Second, "no event", func() bool { v := room(); return len(v.Events.Events) == 0 })

	// A bypass rule: a new visitor to /health then passes the queue
	// (queue_all holds everyone else); disabled, they wait again; deleted.
	if !newVisitorWaits(t, pub, "/health") {
		t.Fatal("a new visitor to /health passes before the rule")
	}
	// The rules panel, opened from the keyboard.
	if err := chromedp.Do(tab, chromedp.Focus(chromedp.CSS(`[data-room="shop"] details[data-panel="rules"] > summary`)), chromedp.KeyEvent("\r")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, tab, 10*time.Second, `document.querySelector('[data-room="shop"] details[data-panel="rules"]').open && !!document.getElementById("s-shop-rule-expression") && !document.querySelector('[aria-busy="true"]')`)
	// Every field of the three panels has a label, every button a name.
	if bad := eval[[]string](t, tab, `(function () {
		var bad = [];
		document.querySelectorAll('[data-room="shop"] .manage :is(input, select, textarea)').forEach(function (c) {
			if (!c.labels || c.labels.length === 0 || c.labels[0].textContent.trim() === "") { bad.push(c.id || c.outerHTML); }
		});
		document.querySelectorAll('[data-room="shop"] .manage button').forEach(function (b) {
			if ((b.getAttribute("aria-label") || b.textContent).trim() === "") { bad.push(b.outerHTML); }
		});
		return bad; })()`); len(bad) != 0 {
		t.Errorf("controls without a label or name: %q", bad)
	}
	typeInto(t, tab, "#s-shop-rule-description", "health")
	typeInto(t, tab, "#s-shop-rule-expression", `path == "/health"`)
	click(t, tab, `[data-submit="rule"]`)
	confirmApply(t, tab, `description: (not set) -> "health"`, `expression: (not set) -> "path == \"/health\""`,
		`action: (not set) -> "bypass_waiting_room"`, `enabled: (not set) -> true`)
	until(t, 10*time.Second, "a new visitor to /health passes", func() bool { return !newVisitorWaits(t, pub, "/health") })
	if !newVisitorWaits(t, pub, "/") {
		t.Fatal("a new visitor to / passes: the rule is too wide")
	}
	waitUntil(t, tab, 10*time.Second, `!!document.querySelector('[data-rule="0"] [data-toggle]')`)
	click(t, tab, `[data-rule="0"] [data-toggle]`)
	confirmApply(t, tab, "enabled: true -> false")
	until(t, 10*time.Second, "a new visitor to /health waits again", func() bool { return newVisitorWaits(t, pub, "/health") })
	waitUntil(t, tab, 10*time.Second, `(function () { var c = document.querySelector('[data-rule="0"] [data-enabled]'); return !!c && c.dataset.enabled === "false"; })()`)
	click(t, tab, `[data-rule="0"] [data-delete]`)
	if got := dialogRows(t, tab); len(got) != 1 || !strings.HasPrefix(got[0], "rule 0 (health): ") {
		t.Fatalf("the delete dialog shows %q", got)
	}
	click(t, tab, "#confirm-apply")
	settled(t, tab)
	until(t, 10*time.Second, "no rule", func() bool { return len(room().Rules.Rules) == 0 })

	if p := os.Getenv(dashboardSettingsPNG); p != "" {
		waitUntil(t, tab, 10*time.Second, `!!document.querySelector('[data-override="webhooks"]')`)
		eval[bool](t, tab, `(function () {
			var r = document.querySelector('[data-room="shop"]');
			r.querySelector('details[data-panel="events"]').open = false;
			r.querySelector('details[data-panel="rules"]').open = false;
			r.querySelector('details[data-panel="settings"]').scrollIntoView();
			return true; })()`)
		if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 1500)); err != nil {
			t.Fatal(err)
		}
		eval[bool](t, tab, `(document.querySelector('[data-room="shop"] details[data-panel="settings"]').scrollIntoView(), true)`)
		png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d bytes)", p, len(png))
	}

	// Reset to the file: every override dropped.
	v := room()
	if len(v.Overrides) != 7 {
		t.Errorf("overrides before the reset: %v", v.Overrides)
	}
	waitUntil(t, tab, 10*time.Second, `!!document.querySelector('[data-reset-all]')`)
	click(t, tab, `[data-reset-all]`)
	if got := dialogRows(t, tab); len(got) != len(v.Overrides) {
		t.Fatalf("the reset dialog shows %q, want a row per override (%d)", got, len(v.Overrides))
	}
	click(t, tab, "#confirm-apply")
	settled(t, tab)
	until(t, 10*time.Second, "no override", func() bool {
		v := room()
		return len(v.Overrides) == 0 && v.Settings["session_duration"] == "5m" && v.Settings["queueing_method"] == "fifo" &&
			v.Settings["refresh_interval"] == "20s" && v.Settings["disable_session_renewal"] == false
	})
	waitUntil(t, tab, 10*time.Second, `document.querySelector('[data-overrides] .note').textContent.indexOf("None") === 0`)

	// The audit view: every change, newest first, by the ops token, as the
	// API lists them.
	au, err := client.Audit(ctx, "shop", 50, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range au.Entries {
		want = append(want, fmt.Sprintf("%d %s %s %s", e.Version, e.Token, e.Action, e.Target))
	}
	wantActions := []string{"room.reset", "rule.delete", "rule.update", "rule.create", "event.delete", "event.update", "event.create",
		"room.update", "room.update", "room.update", "room.update", "room.update", "room.update", "room.update", "room.update"}
	if len(au.Entries) != len(wantActions) {
		t.Fatalf("the API's audit log: %q, want the actions %q", want, wantActions)
	}
	for i, e := range au.Entries {
		if e.Action != wantActions[i] || e.Token != "ops" {
			t.Fatalf("the API's audit log: %q, want the actions %q by ops", want, wantActions)
		}
	}
	const auditRows = `Array.prototype.map.call(document.querySelectorAll("#audit-rows tr[data-version]"), function (tr) {
		return tr.cells[0].textContent + " " + tr.cells[2].textContent + " " + tr.cells[3].textContent + " " + tr.cells[4].textContent; })`
	waitUntil(t, tab, 10*time.Second, auditRows+`.join("\n") === `+jsString(strings.Join(want, "\n")))
	if got := eval[[]string](t, tab, `Array.prototype.map.call(document.querySelectorAll('#audit-rows tr[data-action="room.update"]'), function (tr) {
		return tr.cells[5].textContent + " " + tr.cells[6].textContent; })`); !slices.Contains(got, `{"session_duration":"5m"} {"session_duration":"7m"}`) ||
		!slices.Contains(got, `{"disable_session_renewal":false} {"disable_session_renewal":true}`) {
		t.Errorf("the audit view's room.update entries show before/after %q", got)
	}

	// A read token: the editor is there, every control disabled; a write
	// forced through a re-enabled control shows the API's 403.
	rtab, cancelR := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	defer cancelR()
	var rreqs requestLog
	rreqs.listen(rtab)
	if err := chromedp.Do(rtab, chromedp.EmulateViewport(1280, 1000), chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	login(t, rtab, readTok)
	waitUntil(t, rtab, 15*time.Second, `!!document.querySelector('[data-room="shop"] details[data-panel="settings"]')`)
	click(t, rtab, `[data-room="shop"] details[data-panel="settings"] > summary`)
	waitUntil(t, rtab, 10*time.Second, `!!document.getElementById("s-shop-limits-total_active_users")`)
	if n := eval[int](t, rtab, `(function () {
		var c = document.querySelectorAll('[data-room] :is(button, input, select, textarea):not(.ro-ok)'), n = 0;
		for (var i = 0; i < c.length; i++) { if (!c[i].disabled) { return -1; } n++; }
		return n; })()`); n < 40 {
		t.Fatalf("a read token's editor: %d controls, all disabled, or -1 if one is not", n)
	}
	eval[bool](t, rtab, `(function () {
		var f = document.getElementById("s-shop-limits-total_active_users");
		f.disabled = false; document.querySelector('[data-apply-group="limits"]').disabled = false; return true; })()`)
	typeInto(t, rtab, "#s-shop-limits-total_active_users", "6")
	click(t, rtab, `[data-apply-group="limits"]`)
	waitUntil(t, rtab, 10*time.Second, `document.getElementById("confirm").open`)
	click(t, rtab, "#confirm-apply")
	waitUntil(t, rtab, 10*time.Second, `document.getElementById("confirm-error").textContent.indexOf("This token may only read.") >= 0`)
	t.Logf("read token: %s", eval[string](t, rtab, `document.getElementById("confirm-error").textContent`))
	if v := room(); v.Settings["total_active_users"] != 5.0 || len(v.Overrides) != 0 {
		t.Fatalf("a read token's write changed the room: %v", v.Settings["total_active_users"])
	}

	// On a phone's width, the editor open, nothing overflows sideways.
	click(t, rtab, "#confirm-cancel")
	eval[bool](t, rtab, `(function () {
		document.querySelectorAll('[data-room="shop"] details').forEach(function (d) { d.open = true; }); return true; })()`)
	if err := chromedp.Do(rtab, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, rtab, 10*time.Second, `!document.querySelector('[aria-busy="true"]') && !!document.getElementById("s-shop-rule-expression") &&
		document.documentElement.scrollWidth <= document.documentElement.clientWidth`)

	// Every write the page sent carried If-Match and the token in the
	// Authorization header only; the secret went only in the webhook's
	// PATCH body.
	writes := 0
	for _, r := range append(reqs.all(), rreqs.all()...) {
		if strings.Contains(r.URL, writeTok) || strings.Contains(r.URL, readTok) || strings.Contains(r.URL, hookSecret) {
			t.Errorf("a token or secret in the URL %s", r.URL)
		}
		if r.Method == "GET" {
			continue
		}
		writes++
		auth, _ := r.Headers["Authorization"].(string)
		if (auth != "Bearer "+writeTok && auth != "Bearer "+readTok) || r.Headers["If-Match"] == nil {
			t.Errorf("%s %s with Authorization %q, If-Match %v", r.Method, r.URL, auth, r.Headers["If-Match"])
		}
	}
	if writes != 17 {
		t.Errorf("%d writes sent, want 17 (14 applied, 1 refused, 1 stale, 1 forbidden)", writes)
	}
	t.Logf("the whole run took %v", time.Since(started).Round(time.Second))
}
