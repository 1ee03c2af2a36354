package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/notify"
	"github.com/usherhq/usher/internal/store/local"
)

// visitorHookConfig is a room of one place with a webhook that takes
// every visitor event, and watches its file.
const visitorHookConfig = `listen: 127.0.0.1:0
admin:
  listen: 127.0.0.1:0
  token: t-write
store:
  embedded:
    path: %s
watch_config: true
rooms:
  - id: sale
    origin: %s
    total_active_users: %d
    new_users_per_minute: 100
    refresh_interval: 1s
    json_response_enabled: true
    webhooks:
      - name: all
        url: %s
        secret: %s
        events: [visitor.*, room.settings_changed]
        visitor_events: 1
`

// TestWebhookVisitorEvents runs serve in-process with a webhook taking
// every visitor event (visitor_events 1) to a real receiver: the first
// visitor is admitted, the second gets a place in line, the origin
// revokes the first's session, the second goes in after waiting; then a
// change of the file (watch_config) brings room.settings_changed from
// the reload.
func TestWebhookVisitorEvents(t *testing.T) {
	rc := newReceiver(t, 0)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/logout" {
			w.Header().Set("Usher-Command", "revoke")
		}
		fmt.Fprintln(w, "shop")
	}))
	t.Cleanup(origin.Close)
	dir := t.TempDir()
	path := filepath.Join(dir, "usher.yaml")
	write := func(total int) {
		body := fmt.Sprintf(visitorHookConfig, filepath.Join(dir, "data"), origin.URL, total, rc.srv.URL, webhookE2ESecret)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	pub, _, stop := startMain(t, "serve", "--config", path)
	defer stop()
	visitor := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Jar: jar}
	}
	get := func(c *http.Client, p string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+pub+p, nil)
		req.Header.Set("Accept", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = fmt.Fprint(&b, resp.Status)
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		return b.String() + " " + string(buf[:n])
	}
	a, b := visitor(), visitor()
	if got := get(a, "/"); !strings.Contains(got, "shop") {
		t.Fatalf("first visitor: %s", got)
	}
	if got := get(b, "/"); !strings.Contains(got, `"inWaitingRoom":true`) {
		t.Fatalf("second visitor: %s", got)
	}
	get(a, "/logout")
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(get(b, "/"), "shop") {
		if time.Now().After(deadline) {
			t.Fatal("the second visitor was not admitted after the first's session was revoked")
		}
		time.Sleep(time.Second)
	}
	got := rc.wait(t, 10*time.Second, "visitor events", func(ds []delivery) bool {
		return len(ofType(ds, notify.VisitorAdmitted)) == 2 && len(ofType(ds, notify.VisitorTicketIssued)) == 1 &&
			len(ofType(ds, notify.VisitorRevoked)) == 1
	})
	adm := ofType(got, notify.VisitorAdmitted)
	first, _ := adm[0].raw["data"].(map[string]any)
	second, _ := adm[1].raw["data"].(map[string]any)
	issued, _ := ofType(got, notify.VisitorTicketIssued)[0].raw["data"].(map[string]any)
	revoked, _ := ofType(got, notify.VisitorRevoked)[0].raw["data"].(map[string]any)
	if first["waited_seconds"] != 0.0 || revoked["visitor"] != first["visitor"] || first["visitor"] == "" {
		t.Errorf("first admitted %v, revoked %v: want no wait, the same visitor revoked", first, revoked)
	}
	if issued["position"] != 1.0 || issued["visitor"] != second["visitor"] || !(second["waited_seconds"].(float64) > 0) {
		t.Errorf("ticket issued %v, second admitted %v: want place 1, the same visitor admitted after a wait", issued, second)
	}
	for _, d := range got {
		if d.sigErr != nil {
			t.Errorf("%s: %v", d.event.Type, d.sigErr)
		}
	}

	time.Sleep(1100 * time.Millisecond) // a new modification time
	write(2)
	got = rc.wait(t, 10*time.Second, "room.settings_changed from the reload", func(ds []delivery) bool {
		return len(ofType(ds, notify.SettingsChanged)) == 1
	})
	sc, _ := ofType(got, notify.SettingsChanged)[0].raw["data"].(map[string]any)
	before, _ := sc["before"].(map[string]any)
	after, _ := sc["after"].(map[string]any)
	if sc["source"] != "file" || sc["action"] != "room.reload" || before["total_active_users"] != 1.0 || after["total_active_users"] != 2.0 || sc["node"] == "" {
		t.Errorf("room.settings_changed of the reload: %v", sc)
	}
}

// BenchmarkDecider compares a decision through the engine alone with one
// through the decider that samples visitor events, while no webhook wants
// them: the same allocations (none added), a few ns.
func BenchmarkDecider(b *testing.B) {
	for _, tc := range []struct {
		name  string
		wrap  bool
		hooks []notify.WebhookConfig
	}{
		{"engine", false, nil},
		{"decider/no-webhooks", true, nil},
		{"decider/room-webhook", true, []notify.WebhookConfig{{Room: "sale", Name: "ops", URL: "http://127.0.0.1:1/", Secret: []byte("0123456789abcdef"), Events: []string{"summary.minute"}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			st, err := local.Open(local.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			ev := newEvents(nil)
			defer ev.bus.Close()
			ev.bus.SetWebhooks(tc.hooks)
			e := admission.New(st, admission.Options{})
			var d interface {
				Decide(context.Context, *usher.Room, usher.Visit) (usher.Decision, error)
			} = e
			if tc.wrap {
				d = &decider{Engine: e, ev: ev}
			}
			room := &usher.Room{ID: "sale", Settings: usher.Settings{TotalActiveUsers: 1 << 30, NewUsersPerMinute: 1 << 30,
				SessionDuration: time.Hour, RefreshInterval: 20 * time.Second, QueueingMethod: usher.FIFO}}
			now := time.Now()
			dec, err := d.Decide(context.Background(), room, usher.Visit{Now: now})
			if err != nil || dec.Outcome != usher.Admit {
				b.Fatalf("%v %v", dec.Outcome, err)
			}
			tk := dec.Ticket
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				// An admitted visitor's request: the hot path.
				if _, err := d.Decide(context.Background(), room, usher.Visit{Ticket: &tk, Now: now}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDeciderAllocs: while no webhook wants visitor events (even with
// room webhooks and a monitor counting), an admitted visitor's decision
// through the decider allocates no more than through the engine alone.
func TestDeciderAllocs(t *testing.T) {
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ev := newEvents(nil)
	defer ev.bus.Close()
	room := &usher.Room{ID: "sale", Settings: usher.Settings{TotalActiveUsers: 1 << 30, NewUsersPerMinute: 1 << 30,
		SessionDuration: time.Hour, RefreshInterval: 20 * time.Second, QueueingMethod: usher.FIFO}}
	s := &state{}
	s.set(nil, []*usher.Room{room}, nil, nil)
	ev.startMonitor(s, nil, st, false)
	ev.mon.Check(context.Background(), time.Now()) // knows the room: counts it
	ev.bus.SetWebhooks([]notify.WebhookConfig{{Room: "sale", Name: "ops", URL: "http://127.0.0.1:1/", Secret: []byte("0123456789abcdef"), Events: []string{"summary.minute"}}})
	e := admission.New(st, admission.Options{})
	d := &decider{Engine: e, ev: ev}
	now := time.Now()
	dec, err := d.Decide(context.Background(), room, usher.Visit{Now: now})
	if err != nil || dec.Outcome != usher.Admit {
		t.Fatalf("%v %v", dec.Outcome, err)
	}
	tk := dec.Ticket
	engine := testing.AllocsPerRun(1000, func() { _, _ = e.Decide(context.Background(), room, usher.Visit{Ticket: &tk, Now: now}) })
	wrapped := testing.AllocsPerRun(1000, func() { _, _ = d.Decide(context.Background(), room, usher.Visit{Ticket: &tk, Now: now}) })
	if wrapped > engine {
		t.Errorf("a decision allocates %v times through the decider, %v through the engine", wrapped, engine)
	}
}

// TestSessionEndedEvent: an admitted visitor who comes back after its
// session ended is sent as visitor.session_ended, when sampled in.
func TestSessionEndedEvent(t *testing.T) {
	rc := newReceiver(t, 0)
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ev := newEvents(nil)
	defer ev.bus.Close()
	ev.bus.SetWebhooks([]notify.WebhookConfig{{Room: "sale", Name: "ops", URL: rc.srv.URL, Secret: []byte(webhookE2ESecret),
		Events: []string{notify.VisitorSessionEnded}, VisitorSample: 1}})
	d := &decider{Engine: admission.New(st, admission.Options{}), ev: ev}
	room := &usher.Room{ID: "sale", Settings: usher.Settings{TotalActiveUsers: 10, NewUsersPerMinute: 10,
		SessionDuration: time.Minute, RefreshInterval: 20 * time.Second, QueueingMethod: usher.FIFO}}
	now := time.Now()
	dec, err := d.Decide(context.Background(), room, usher.Visit{Now: now})
	if err != nil || dec.Outcome != usher.Admit {
		t.Fatalf("%v %v", dec.Outcome, err)
	}
	tk := dec.Ticket
	if _, err := d.Decide(context.Background(), room, usher.Visit{Ticket: &tk, Now: now.Add(30 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Decide(context.Background(), room, usher.Visit{Ticket: &tk, Now: now.Add(3 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	got := rc.wait(t, 5*time.Second, "visitor.session_ended", func(ds []delivery) bool { return len(ds) >= 1 })
	time.Sleep(200 * time.Millisecond)
	rc.mu.Lock()
	n := len(rc.got)
	rc.mu.Unlock()
	data, _ := got[0].raw["data"].(map[string]any)
	if n != 1 || got[0].event.Type != notify.VisitorSessionEnded || data["session_end"] == nil {
		t.Errorf("%d deliveries, the first %s %v; want one visitor.session_ended with its end", n, got[0].event.Type, data)
	}
}

// BenchmarkDeciderRatio times an admitted visitor's decision through the
// engine alone and through the decider (no webhook wants visitor events;
// one room webhook exists, so the monitor counts), in alternating rounds
// of 20,000, and reports the median of the rounds' ratios (decider /
// engine), which drift on a loaded machine cancels out of.
func BenchmarkDeciderRatio(b *testing.B) {
	st, err := local.Open(local.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ev := newEvents(nil)
	defer ev.bus.Close()
	room := &usher.Room{ID: "sale", Settings: usher.Settings{TotalActiveUsers: 1 << 30, NewUsersPerMinute: 1 << 30,
		SessionDuration: time.Hour, RefreshInterval: 20 * time.Second, QueueingMethod: usher.FIFO}}
	s := &state{}
	s.set(nil, []*usher.Room{room}, nil, nil)
	ev.startMonitor(s, nil, st, false)
	ev.mon.Check(context.Background(), time.Now())
	ev.bus.SetWebhooks([]notify.WebhookConfig{{Room: "sale", Name: "ops", URL: "http://127.0.0.1:1/", Secret: []byte("0123456789abcdef"), Events: []string{"summary.minute"}}})
	e := admission.New(st, admission.Options{})
	d := &decider{Engine: e, ev: ev}
	now := time.Now()
	dec, err := d.Decide(context.Background(), room, usher.Visit{Now: now})
	if err != nil {
		b.Fatal(err)
	}
	tk := dec.Ticket
	const n = 20000
	run := func(f func(context.Context, *usher.Room, usher.Visit) (usher.Decision, error)) time.Duration {
		start := time.Now()
		for range n {
			_, _ = f(context.Background(), room, usher.Visit{Ticket: &tk, Now: now})
		}
		return time.Since(start)
	}
	var ratios []float64
	var engineNs []float64
	for range b.N {
		for range 15 {
			a := run(e.Decide)
			w := run(d.Decide)
			ratios = append(ratios, float64(w)/float64(a))
			engineNs = append(engineNs, float64(a.Nanoseconds())/n)
		}
	}
	b.ReportMetric(median(ratios), "ratio")
	b.ReportMetric(median(engineNs), "engine-ns/op")
}

// TestWebhookSetAtRuntime runs serve in-process without webhooks and adds
// one through the CLI (usher room set ROOM webhooks=JSON, the admin API's
// PATCH): a real receiver gets events signed with its secret; events
// changed without sending the secret again keep it; usher room get, the
// audit log and usher check --admin never show the secret or the URL's
// path; unset drops it.
func TestWebhookSetAtRuntime(t *testing.T) {
	rc := newReceiver(t, 0)
	dir := t.TempDir()
	path := writeConfig(t, fmt.Sprintf(adminServeConfig, filepath.Join(dir, "data"), httpServer(t)))
	_, adm, stop := startMain(t, "serve", "--config", path)
	defer stop()
	hookURL := rc.srv.URL + "/hook/PATH-TOKEN"
	noSecret := func(what, out string) {
		t.Helper()
		for _, s := range []string{webhookE2ESecret, "PATH-TOKEN"} {
			if strings.Contains(out, s) {
				t.Errorf("%s shows %q:\n%s", what, s, out)
			}
		}
	}

	out := mustCLI(t, adm, "room", "set", "sale", `webhooks=[{"name":"ops","url":"`+hookURL+`","secret":"`+webhookE2ESecret+`","events":["room.settings_changed"]}]`)
	noSecret("room set", out)
	if !strings.Contains(out, `"secret":"(set)"`) {
		t.Errorf("room set:\n%s", out)
	}
	mustCLI(t, adm, "room", "queue-all", "sale", "on")
	got := rc.wait(t, 10*time.Second, "room.settings_changed of queue-all", func(ds []delivery) bool {
		for _, d := range ofType(ds, notify.SettingsChanged) {
			if after, _ := d.raw["data"].(map[string]any)["after"].(map[string]any); after["queue_all"] == true {
				return true
			}
		}
		return false
	})
	for _, d := range got {
		if d.sigErr != nil || !strings.HasPrefix(d.header.Get("User-Agent"), "usher-webhook/") {
			t.Errorf("%s: signature %v, User-Agent %q", d.event.Type, d.sigErr, d.header.Get("User-Agent"))
		}
	}

	// Events changed without the secret: it is kept (the receiver checks
	// each signature against it).
	mustCLI(t, adm, "room", "set", "sale", `webhooks=[{"name":"ops","url":"`+hookURL+`","events":["room.settings_changed","queueing.*"]}]`)
	n := len(got)
	mustCLI(t, adm, "room", "queue-all", "sale", "off")
	got = rc.wait(t, 10*time.Second, "room.settings_changed of queue-all off", func(ds []delivery) bool {
		for _, d := range ofType(ds, notify.SettingsChanged) {
			if after, _ := d.raw["data"].(map[string]any)["after"].(map[string]any); after["queue_all"] == false {
				return true
			}
		}
		return false
	})
	for _, d := range got[n:] {
		if d.sigErr != nil {
			t.Errorf("after the events changed, %s: %v", d.event.Type, d.sigErr)
		}
	}

	// A secret_file is refused, naming the field; nothing changes.
	code, _, errs := cli(t, adm, "write-secret", "room", "set", "sale", `webhooks=[{"name":"ops","url":"`+hookURL+`","secret_file":"/etc/usher/hook"}]`)
	if code != 1 || !strings.Contains(errs, "webhooks[0].secret_file: cannot be set through the API") {
		t.Errorf("secret_file: exit %d, %s", code, errs)
	}

	out = mustCLI(t, adm, "room", "get", "sale")
	noSecret("room get", out)
	if !strings.Contains(out, "webhooks") || !strings.Contains(out, `"secret":"(set)"`) || !strings.Contains(out, `"url":"http://127.0.0.1:`) {
		t.Errorf("room get:\n%s", out)
	}
	noSecret("room get --json", mustCLI(t, adm, "room", "get", "sale", "--json"))
	noSecret("audit", mustCLI(t, adm, "audit", "--room", "sale", "--json"))
	code, out, errs = runMain(t, "check", "--config", path, "--admin", adm, "--token", "read-secret")
	noSecret("check --admin", out+errs)
	if code != 0 || !strings.Contains(out, "webhooks = 1 item (file: 0 items)") {
		t.Errorf("check --admin: exit %d\n%s%s", code, out, errs)
	}

	// Unset: the file's webhooks (none) again; nothing more is sent.
	mustCLI(t, adm, "room", "unset", "sale", "webhooks")
	rc.mu.Lock()
	n = len(rc.got)
	rc.mu.Unlock()
	mustCLI(t, adm, "room", "queue-all", "sale", "on")
	time.Sleep(time.Second)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.got) != n {
		t.Errorf("the receiver got %d requests after the webhook was unset", len(rc.got)-n)
	}
}
