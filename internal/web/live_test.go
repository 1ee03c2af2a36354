package web

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

var liveJSON = regexp.MustCompile(`(?s)<script type="application/json" id="usher-live">(.*?)</script>`)

// renderLive renders page with pd and returns it and its LiveData.
func renderLive(t *testing.T, page string, pd PageData) (string, LiveData) {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, page, pd); err != nil {
		t.Fatal(err)
	}
	m := liveJSON.FindStringSubmatch(buf.String())
	if m == nil {
		t.Fatalf("no #usher-live in the page")
	}
	var ld LiveData
	if err := json.Unmarshal([]byte(m[1]), &ld); err != nil {
		t.Fatalf("#usher-live: %v: %s", err, m[1])
	}
	return buf.String(), ld
}

// TestLivePageContent: the waiting page carries what its script needs to
// update it in place, keeps the meta refresh for browsers without
// JavaScript, and keeps the notification button hidden until the script
// shows it.
func TestLivePageContent(t *testing.T) {
	room := &usher.Room{ID: "sale", Name: `</script><script>alert(1)</script>`, Settings: usher.Settings{
		RefreshInterval: 20 * time.Second, JSONResponseEnabled: true}}
	pd := NewPageData(room, usher.Decision{Outcome: usher.Wait, Position: 1234, WaitKnown: true,
		EstimatedWait: 150 * time.Second, RefreshAfter: 19500 * time.Millisecond}, at)
	page, ld := renderLive(t, PageWaiting, pd)
	if !ld.JSON || ld.Page != PageWaiting || ld.Refresh != 20 || ld.Position != 1234 || !ld.WaitKnown ||
		ld.WaitSeconds != 150 || ld.Method != "fifo" || ld.Room != room.Name || ld.Group != "," || ld.MinGroup != 4 {
		t.Errorf("live data = %+v", ld)
	}
	if ld.Text["position"] != "You are number {n} in line" || ld.Text["ahead.other"] != "{n} people are ahead of you." ||
		ld.Text["status"] != "{place}. Estimated wait: {wait}." {
		t.Errorf("live texts = %q", ld.Text)
	}
	if strings.Count(page, "</script>") != 2 {
		t.Errorf("the room name closed a script element:\n%s", page)
	}
	for _, want := range []string{
		`<meta http-equiv="refresh" content="20">`,
		`<h1 id="heading">You are number 1,234 in line</h1>`,
		`<p class="lead" id="lead">1,233 people are ahead of you.</p>`,
		`<div class="bar" id="progress" role="progressbar" aria-label="How close you are to the front" aria-valuemin="0" aria-valuemax="100" aria-valuenow="29">`,
		`<dd id="wait">about 3 minutes</dd>`,
		`<div class="notify" id="notify-box" hidden>`,
		`<button type="button" id="notify" aria-pressed="false" aria-describedby="notify-status">Notify me when it is my turn</button>`,
		`<p class="note" id="notify-status" aria-live="polite"></p>`,
		`<p class="sr-only" id="status" aria-live="polite" aria-atomic="true"></p>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}

	// Without JSON the script reloads, as the meta refresh does.
	room.JSONResponseEnabled = false
	if _, ld := renderLive(t, PageWaiting, NewPageData(room, usher.Decision{Outcome: usher.Wait, Position: 2}, at)); ld.JSON {
		t.Errorf("room without JSON: live data says json")
	}
	// A page without a place has an empty, hidden lead for the script.
	page, _ = renderLive(t, PageWaiting, NewPageData(room, usher.Decision{Outcome: usher.Wait}, at))
	if !strings.Contains(page, `<p class="lead" id="lead" hidden></p>`) {
		t.Errorf("page without a place lacks the hidden lead")
	}
	// The pre-queue page says so.
	pre := NewPageData(room, usher.Decision{Outcome: usher.Wait}, at)
	pre.Prequeue, pre.EventStart = true, at.Add(time.Hour)
	if _, ld := renderLive(t, PagePrequeue, pre); ld.Page != PagePrequeue || !ld.Prequeue {
		t.Errorf("pre-queue live data = %+v", ld)
	}
}

// TestLiveTextsEveryLanguage: every language gives the script every text,
// and French numbers keep their narrow no-break space.
func TestLiveTextsEveryLanguage(t *testing.T) {
	for _, lang := range Languages() {
		ld := PageData{Lang: lang}.Live()
		for k, v := range ld.Text {
			if v == "" {
				t.Errorf("%s: live text %s is empty", lang, k)
			}
		}
		if lang != "en-US" && ld.Text["notifyTurn"] == catalog[0].NotifyTurn {
			t.Errorf("%s: notification text in English", lang)
		}
	}
	if g := (PageData{Lang: "fr-FR"}).Live().Group; g != "\u202f" {
		t.Errorf("fr-FR group %q", g)
	}
}
