package web

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// allVars names every variable of Vars, in the order of its doc comment.
var allVars = []string{
	"waitTimeKnown", "waitTime", "waitTimeSeconds", "waitTimeFormatted", "waitTimeHours", "waitTimeHourMinutes",
	"waitTimeLow", "waitTimeHigh", "waitTime25Percentile", "waitTime50Percentile", "waitTime75Percentile",
	"inWaitingRoom", "queueIsFull", "queueAll", "lastUpdated", "refreshIntervalSeconds", "queueingMethod",
	"isFIFOQueue", "isRandomQueue", "position", "peopleAhead", "roomName", "eventName", "isEventPrequeueing",
	"timeUntilEventStart", "timeUntilEventStartFormatted", "eventStartTime", "locale", "usherRefreshMeta",
}

func mustCustom(t *testing.T, html string) *Template {
	t.Helper()
	c, err := NewCustom(html)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func renderCustom(t *testing.T, c *Template, pd PageData) string {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(&buf, pd); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestCustomVariables renders each variable in three states.
func TestCustomVariables(t *testing.T) {
	var tmpl strings.Builder
	for _, v := range allVars {
		tmpl.WriteString(v + "=[{{" + v + "}}]\n")
	}
	c := mustCustom(t, tmpl.String())

	room := &usher.Room{ID: "sale", Name: `Tom & "Jerry" <Sale>`, Settings: usher.Settings{RefreshInterval: 20 * time.Second}}
	fifo := NewPageData(room, usher.Decision{Outcome: usher.Wait, Position: 12, WaitKnown: true,
		EstimatedWait: 125 * time.Minute, Stats: usher.RoomStats{AdmittedLastMinute: 4}}, at)
	random := NewPageData(&usher.Room{ID: "drop", Settings: usher.Settings{QueueingMethod: usher.Random}},
		usher.Decision{Outcome: usher.Wait, Position: 3, WaitKnown: true, EstimatedWait: 10 * time.Minute,
			RefreshAfter: 30 * time.Second}, at)
	random.WaitLow, random.WaitHigh, random.Lang = 5, 15, "de"
	pre := NewPageData(room, usher.Decision{Outcome: usher.Wait, QueueAll: true}, at)
	pre.Prequeue, pre.EventName, pre.EventStart, pre.Lang = true, "Launch", at.Add(90*time.Minute+time.Second), "ja-JP"

	tests := []struct {
		name string
		pd   PageData
		want string
	}{
		{"fifo", fifo, `waitTimeKnown=[true]
waitTime=[125]
waitTimeSeconds=[7500]
waitTimeFormatted=[2 hours 5 minutes]
waitTimeHours=[2]
waitTimeHourMinutes=[5]
waitTimeLow=[0]
waitTimeHigh=[0]
waitTime25Percentile=[0]
waitTime50Percentile=[0]
waitTime75Percentile=[0]
inWaitingRoom=[true]
queueIsFull=[false]
queueAll=[false]
lastUpdated=[2026-03-14T15:09:26Z]
refreshIntervalSeconds=[20]
queueingMethod=[fifo]
isFIFOQueue=[true]
isRandomQueue=[false]
position=[12]
peopleAhead=[11]
roomName=[Tom &amp; &#34;Jerry&#34; &lt;Sale&gt;]
eventName=[]
isEventPrequeueing=[false]
timeUntilEventStart=[0]
timeUntilEventStartFormatted=[]
eventStartTime=[]
locale=[en-US]
usherRefreshMeta=[&lt;meta http-equiv=&#34;refresh&#34; content=&#34;20&#34;&gt;]
`},
		{"random", random, `waitTimeKnown=[true]
waitTime=[10]
waitTimeSeconds=[600]
waitTimeFormatted=[zwischen 5 und 15 Minuten]
waitTimeHours=[0]
waitTimeHourMinutes=[10]
waitTimeLow=[5]
waitTimeHigh=[15]
waitTime25Percentile=[5]
waitTime50Percentile=[10]
waitTime75Percentile=[15]
inWaitingRoom=[true]
queueIsFull=[false]
queueAll=[false]
lastUpdated=[2026-03-14T15:09:26Z]
refreshIntervalSeconds=[30]
queueingMethod=[random]
isFIFOQueue=[false]
isRandomQueue=[true]
position=[3]
peopleAhead=[2]
roomName=[drop]
eventName=[]
isEventPrequeueing=[false]
timeUntilEventStart=[0]
timeUntilEventStartFormatted=[]
eventStartTime=[]
locale=[de-DE]
usherRefreshMeta=[&lt;meta http-equiv=&#34;refresh&#34; content=&#34;30&#34;&gt;]
`},
		{"prequeue", pre, `waitTimeKnown=[false]
waitTime=[0]
waitTimeSeconds=[0]
waitTimeFormatted=[]
waitTimeHours=[0]
waitTimeHourMinutes=[0]
waitTimeLow=[0]
waitTimeHigh=[0]
waitTime25Percentile=[0]
waitTime50Percentile=[0]
waitTime75Percentile=[0]
inWaitingRoom=[true]
queueIsFull=[false]
queueAll=[true]
lastUpdated=[2026-03-14T15:09:26Z]
refreshIntervalSeconds=[20]
queueingMethod=[fifo]
isFIFOQueue=[true]
isRandomQueue=[false]
position=[0]
peopleAhead=[0]
roomName=[Tom &amp; &#34;Jerry&#34; &lt;Sale&gt;]
eventName=[Launch]
isEventPrequeueing=[true]
timeUntilEventStart=[91]
timeUntilEventStartFormatted=[1時間31分]
eventStartTime=[2026-03-14T16:39:27Z]
locale=[ja-JP]
usherRefreshMeta=[&lt;meta http-equiv=&#34;refresh&#34; content=&#34;20&#34;&gt;]
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := renderCustom(t, c, tt.pd); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}

	var keys []string
	for k := range fifo.Vars() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := slices.Clone(allVars)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("Vars keys = %q, want %q (update allVars, the doc comment and TEMPLATES.md)", keys, want)
	}
}

func TestCustomDocumented(t *testing.T) {
	doc, err := os.ReadFile("TEMPLATES.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range allVars {
		if !strings.Contains(string(doc), "`"+v+"`") {
			t.Errorf("TEMPLATES.md does not document %s", v)
		}
	}
}

// TestCustomCloudflareTemplate renders a template in Cloudflare's style:
// sections, inverted sections, the raw refresh tag, escaping.
func TestCustomCloudflareTemplate(t *testing.T) {
	c := mustCustom(t, `<!DOCTYPE html>
<html lang="{{locale}}">
<head>{{{usherRefreshMeta}}}<title>{{roomName}}</title></head>
<body>
{{#isEventPrequeueing}}<p>Starts in {{timeUntilEventStartFormatted}}</p>{{/isEventPrequeueing}}
{{^isEventPrequeueing}}{{#waitTimeKnown}}<p>{{waitTime}} mins</p>{{/waitTimeKnown}}{{^waitTimeKnown}}<p>Queue all enabled</p>{{/waitTimeKnown}}
{{#isFIFOQueue}}<p>#{{position}}</p>{{/isFIFOQueue}}{{/isEventPrequeueing}}
<p>{{&roomName}}</p>
</body>
</html>`)
	room := &usher.Room{ID: "r", Name: "<b>Sale</b>"}
	pd := NewPageData(room, usher.Decision{Outcome: usher.Wait, Position: 4, WaitKnown: true, EstimatedWait: 3 * time.Minute}, at)
	got := renderCustom(t, c, pd)
	for _, want := range []string{
		`<html lang="en-US">`,
		`<head><meta http-equiv="refresh" content="20"><title>&lt;b&gt;Sale&lt;/b&gt;</title></head>`,
		"<p>3 mins</p>", "<p>#4</p>", "<p><b>Sale</b></p>",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("page lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range []string{"Queue all enabled", "Starts in"} {
		if strings.Contains(got, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	pd = NewPageData(room, usher.Decision{Outcome: usher.Wait, QueueAll: true}, at)
	pd.Prequeue, pd.EventStart = true, at.Add(3*time.Minute)
	got = renderCustom(t, c, pd)
	if !strings.Contains(got, "<p>Starts in 3 minutes</p>") || strings.Contains(got, "mins") {
		t.Errorf("pre-queue page:\n%s", got)
	}
}

func TestCustomMalformed(t *testing.T) {
	tests := []struct {
		name, html, want string
	}{
		// Lines are mustache's: the end of the text for an unclosed
		// section, the line after a standalone closing tag.
		{"unclosed section", "<p>\n{{#waitTimeKnown}}\n{{waitTime}}", "line 3"},
		{"unmatched close", "a\nb\n{{/waitTimeKnown}}", "line 3"},
		{"interleaved", "{{#a}}\n{{#b}}\n{{/a}} x\n{{/b}}", "line 3"},
		{"unclosed tag", "<p>{{waitTime</p>", "line 1"},
		{"partial", "<p>{{> header}}</p>", `partial "header"`},
		{"nested partial", "{{#waitTimeKnown}}{{>/etc/passwd}}{{/waitTimeKnown}}", `partial "/etc/passwd"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewCustom(tt.html)
			if err == nil {
				t.Fatalf("NewCustom accepted %q", tt.html)
			}
			if c != nil || !strings.HasPrefix(err.Error(), "custom page: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q in it", err, tt.want)
			}
		})
	}
}

func TestLoadCustom(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.html")
	mustWrite(t, good, "<p>{{roomName}}</p>")
	c, err := LoadCustom(good)
	if err != nil {
		t.Fatal(err)
	}
	if got := renderCustom(t, c, PageData{RoomName: "x"}); got != "<p>x</p>" {
		t.Errorf("got %q", got)
	}
	bad := filepath.Join(dir, "bad.html")
	mustWrite(t, bad, "\n\n{{#a}}")
	if _, err := LoadCustom(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("err = %v", err)
	}
	if _, err := LoadCustom(filepath.Join(dir, "missing.html")); err == nil {
		t.Error("LoadCustom read a missing file")
	}
	var nilTemplate *Template
	if err := nilTemplate.Render(&bytes.Buffer{}, PageData{}); err == nil {
		t.Error("nil Template rendered")
	}
}
