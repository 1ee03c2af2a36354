package admin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/notify"
)

// hookConfig is apiConfig's sale room with a webhook.
var hookConfig = strings.Replace(apiConfig, "    total_active_users: 200\n", `    total_active_users: 200
    webhooks:
      - name: ops
        url: https://hooks.example/usher/PATH-TOKEN
        secret: webhook-secret-0123456789
`, 1)

// Secrets and URL parts of hookConfig and of the webhooks set at runtime
// that no answer of the API may show.
var hookSecrets = []string{"webhook-secret", "PATH-TOKEN", "runtime-secret", "RUNTIME-PATH", "rotated", "QUERY-TOKEN", "other-secret"}

// noSecrets fails when body shows one of hookSecrets.
func noSecrets(t *testing.T, what, body string) {
	t.Helper()
	for _, secret := range hookSecrets {
		if strings.Contains(body, secret) {
			t.Errorf("%s shows %q: %s", what, secret, body)
		}
	}
}

// appliedHooks returns the webhooks of the config the node applied last.
func (a *apiTest) appliedHooks(t *testing.T) []config.Webhook {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.applied) == 0 {
		t.Fatal("no config applied")
	}
	return a.applied[len(a.applied)-1].Webhooks
}

// TestWebhooksNeverShown: a room's webhooks are set at runtime as a whole
// list, checked as the file's are, and their secrets and URLs' paths are
// never shown: not by GET, not in the audit log, not in errors. A
// webhook sent again without its secret (or with "(set)") under the same
// name and URL keeps it. The audit entry of a change goes to Changed
// once the change is stored.
func TestWebhooksNeverShown(t *testing.T) {
	a := newAPITest(t, nil, hookConfig)
	var got []AuditEntry
	a.h.changed = func(e AuditEntry) { got = append(got, e) }
	const hookURL = "https://hooks.example/RUNTIME-PATH?k=QUERY-TOKEN"
	set := func(etag, hooks string) *httptest.ResponseRecorder {
		t.Helper()
		rec := a.do(t, "PATCH", "/api/v1/rooms/sale", writeToken, etag, `{"webhooks":`+hooks+`}`)
		noSecrets(t, "PATCH "+hooks, rec.Body.String())
		return rec
	}
	etag := a.etag(t, "/api/v1/rooms/sale")
	if v := a.room(t, "sale"); compactJSON(v.Settings["webhooks"]) != `[{"name":"ops","secret":"(set)","url":"https://hooks.example/…"}]` {
		t.Errorf("the file's webhooks shown as %s", compactJSON(v.Settings["webhooks"]))
	}

	// Refused: nothing stored, nothing reported, nothing applied.
	applied := a.appliedCount()
	for _, tc := range []struct {
		hooks  string
		status int
		field  string
	}{
		{`[{"name":"x","url":"https://hooks.example/","secret_file":"/etc/usher/other-secret"}]`, 400, "webhooks[0].secret_file"},
		{`[{"name":"x","url":"ftp://hooks.example/RUNTIME-PATH","secret":"runtime-secret-0123"}]`, 422, "webhooks[0].url"},
		{`[{"name":"x","url":"https://hooks.example/","secret":"runtime-secret-0123","events":["queueing.nosuch"]}]`, 422, "webhooks[0].events[0]"},
		{`[{"name":"x","url":"https://hooks.example/","secret":"runtime-secret-0123","timeout":"1h"}]`, 422, "webhooks[0].timeout"},
		{`[{"name":"x","url":"https://hooks.example/","secret":"runtime-secret-0123","retries":3}]`, 400, "webhooks[0].retries"},
		{`[{"name":"x","url":"https://hooks.example/"}]`, 422, "webhooks[0].secret"},
		{`[{"name":"x","url":"https://hooks.example/","secret":"(set)"}]`, 422, "webhooks[0].secret"},
		{`{"name":"x"}`, 400, "webhooks"},
	} {
		rec := set(etag, tc.hooks)
		if rec.Code != tc.status || apiErr(t, rec).Field != tc.field {
			t.Errorf("PATCH %s: %d %s, want %d naming %s", tc.hooks, rec.Code, rec.Body, tc.status, tc.field)
		}
	}
	if len(got) != 0 || a.version(t) != 0 || a.appliedCount() != applied {
		t.Fatalf("a refused change was reported (%d), stored (version %d) or applied", len(got), a.version(t))
	}

	// Set: in force with its secret, shown without it.
	rec := set(etag, `[{"name":"ops2","url":"`+hookURL+`","secret":"runtime-secret-0123","events":["queueing.*"]}]`)
	if rec.Code != http.StatusOK {
		t.Fatalf("PATCH webhooks: %d %s", rec.Code, rec.Body)
	}
	if h := a.appliedHooks(t); len(h) != 1 || h[0].Name != "ops2" || h[0].URL != hookURL || h[0].SecretValue() != "runtime-secret-0123" || h[0].Room != "sale" {
		t.Fatalf("applied webhooks %+v", h)
	}
	v := a.room(t, "sale")
	if want := `[{"events":["queueing.*"],"name":"ops2","secret":"(set)","url":"https://hooks.example/…"}]`; compactJSON(v.Settings["webhooks"]) != want ||
		compactJSON(v.Overrides["webhooks"].Value) != want {
		t.Errorf("webhooks shown as %s, override %s", compactJSON(v.Settings["webhooks"]), compactJSON(v.Overrides["webhooks"].Value))
	}
	if len(got) != 1 || got[0].Version != 1 || got[0].Token != "admin" || got[0].Action != "room.update" || got[0].Room != "sale" {
		t.Fatalf("Changed got %+v, want the room.update of version 1 by admin", got)
	}
	if b := compactJSON(got[0].Before); !strings.Contains(b, `"name":"ops"`) || !strings.Contains(compactJSON(got[0].After), `"name":"ops2"`) {
		t.Errorf("audit before %s, after %s", b, compactJSON(got[0].After))
	}
	if rec := a.do(t, "PATCH", "/api/v1/rooms/sale", writeToken, etag, `{"queue_all":true}`); rec.Code != http.StatusPreconditionFailed {
		t.Errorf("PATCH with the ETag from before the webhooks changed: %d %s, want 412", rec.Code, rec.Body)
	}

	// Sent again without the secret, or with "(set)": the secret is kept.
	etag = v.ETag
	for i, hooks := range []string{
		`[{"name":"ops2","url":"` + hookURL + `","events":["queueing.*","room.*"]}]`,
		`[{"name":"ops2","url":"` + hookURL + `","secret":"(set)","events":["room.*"]}]`,
		`[{"name":"ops2","url":"` + hookURL + `","secret":null}]`,
	} {
		rec := set(etag, hooks)
		if rec.Code != http.StatusOK {
			t.Fatalf("PATCH without the secret: %d %s", rec.Code, rec.Body)
		}
		etag = rec.Header().Get("ETag")
		if h := a.appliedHooks(t); len(h) != 1 || h[0].SecretValue() != "runtime-secret-0123" || len(h[0].Events) != 2-i {
			t.Fatalf("applied webhooks %+v, want the secret kept", h)
		}
	}
	// A new secret alone is a change: a new ETag, though nothing shown
	// differs.
	a.h.now = func() time.Time { return testNow.Add(time.Minute) }
	rec = set(etag, `[{"name":"ops2","url":"`+hookURL+`","secret":"runtime-secret-rotated"}]`)
	if rec.Code != http.StatusOK || rec.Header().Get("ETag") == etag {
		t.Fatalf("PATCH a new secret: %d, ETag %s (was %s)", rec.Code, rec.Header().Get("ETag"), etag)
	}
	if h := a.appliedHooks(t); len(h) != 1 || h[0].SecretValue() != "runtime-secret-rotated" {
		t.Fatalf("applied webhooks %+v, want the new secret", h)
	}
	if rec := set(etag, `[{"name":"ops2","url":"`+hookURL+`"}]`); rec.Code != http.StatusPreconditionFailed {
		t.Errorf("PATCH with the ETag from before the new secret: %d %s, want 412", rec.Code, rec.Body)
	}
	etag = rec.Header().Get("ETag")
	// Another URL: the secret is not kept.
	if rec := set(etag, `[{"name":"ops2","url":"https://elsewhere.example/"}]`); rec.Code != http.StatusUnprocessableEntity || apiErr(t, rec).Field != "webhooks[0].secret" {
		t.Errorf("PATCH to another URL without a secret: %d %s", rec.Code, rec.Body)
	}

	for _, path := range []string{"/api/v1/rooms/sale", "/api/v1/rooms", "/api/v1/audit", "/api/v1/overrides", "/api/v1/status"} {
		noSecrets(t, "GET "+path, a.do(t, "GET", path, readToken, "", "").Body.String())
	}
	for _, e := range got {
		noSecrets(t, "the audit entry", compactJSON(e))
	}

	// null: back to the file's webhooks.
	if rec := set(etag, `null`); rec.Code != http.StatusOK {
		t.Fatalf("PATCH webhooks null: %d %s", rec.Code, rec.Body)
	}
	if h := a.appliedHooks(t); len(h) != 1 || h[0].Name != "ops" || h[0].SecretValue() != "webhook-secret-0123456789" {
		t.Fatalf("applied webhooks %+v, want the file's", h)
	}
	if _, ok := a.room(t, "sale").Overrides["webhooks"]; ok {
		t.Error("the webhooks override is still shown")
	}
	noSecrets(t, "GET /api/v1/audit", a.do(t, "GET", "/api/v1/audit", readToken, "", "").Body.String())
}

// TestWebhooksSentBackAsShown: a room's webhooks as GET shows them (URL
// as scheme and host, secret as "(set)"), edited and sent back, keep the
// URL and secret of the webhook in force of the same name; a webhook of
// another name gets neither, and nothing changes.
func TestWebhooksSentBackAsShown(t *testing.T) {
	a := newAPITest(t, nil, hookConfig)
	const fileURL, fileSecret = "https://hooks.example/usher/PATH-TOKEN", "webhook-secret-0123456789"
	v := a.room(t, "sale")
	shown := v.Settings["webhooks"].([]any)[0].(map[string]any)
	if shown["url"] != "https://hooks.example/…" || shown["secret"] != config.SecretShown {
		t.Fatalf("the file's webhook shown as %v", shown)
	}
	shown["events"] = []string{"queueing.*"}
	rec := a.do(t, "PATCH", "/api/v1/rooms/sale", writeToken, v.ETag, `{"webhooks":[`+compactJSON(shown)+`]}`)
	if rec.Code != http.StatusOK {
		t.Fatalf("PATCH the webhook as shown, with events: %d %s", rec.Code, rec.Body)
	}
	noSecrets(t, "PATCH", rec.Body.String())
	if h := a.appliedHooks(t); len(h) != 1 || h[0].Name != "ops" || h[0].URL != fileURL || h[0].SecretValue() != fileSecret ||
		len(h[0].Events) != 1 || h[0].Events[0] != "queueing.*" {
		t.Fatalf("applied webhooks %+v, want the file's URL and secret with the new events", h)
	}
	etag := rec.Header().Get("ETag")

	// Without a secret field at all, as shown: kept too.
	rec = a.do(t, "PATCH", "/api/v1/rooms/sale", writeToken, etag, `{"webhooks":[{"name":"ops","url":"https://hooks.example/…","timeout":"3s"}]}`)
	if rec.Code != http.StatusOK {
		t.Fatalf("PATCH the webhook as shown, no secret: %d %s", rec.Code, rec.Body)
	}
	if h := a.appliedHooks(t); len(h) != 1 || h[0].URL != fileURL || h[0].SecretValue() != fileSecret || h[0].Timeout != 3*time.Second {
		t.Fatalf("applied webhooks %+v", h)
	}
	etag = rec.Header().Get("ETag")

	// Another name: neither the URL nor the secret is kept; refused.
	applied, version := a.appliedCount(), a.version(t)
	rec = a.do(t, "PATCH", "/api/v1/rooms/sale", writeToken, etag, `{"webhooks":[{"name":"other","url":"https://hooks.example/…","secret":"(set)"}]}`)
	if rec.Code != http.StatusUnprocessableEntity || !strings.HasPrefix(apiErr(t, rec).Field, "webhooks[0].") {
		t.Fatalf("PATCH another name with the shown URL: %d %s, want 422 naming the webhook", rec.Code, rec.Body)
	}
	noSecrets(t, "the refusal", rec.Body.String())
	if a.appliedCount() != applied || a.version(t) != version {
		t.Fatal("a refused change was stored or applied")
	}
	// A new full URL with the same name: the secret goes with the old URL,
	// so one is required.
	rec = a.do(t, "PATCH", "/api/v1/rooms/sale", writeToken, etag, `{"webhooks":[{"name":"ops","url":"https://hooks.example/RUNTIME-PATH"}]}`)
	if rec.Code != http.StatusUnprocessableEntity || apiErr(t, rec).Field != "webhooks[0].secret" {
		t.Fatalf("PATCH a new URL without a secret: %d %s, want 422 naming webhooks[0].secret", rec.Code, rec.Body)
	}
}

// TestRoomDiffs: a reload's changes, room by room, with the values before
// and after.
func TestRoomDiffs(t *testing.T) {
	from := mustParseConfig(t, apiConfig)
	to := mustParseConfig(t, strings.Replace(strings.Replace(apiConfig, "total_active_users: 10\n", "total_active_users: 12\n    queue_all: true\n", 1),
		"  - id: sale", "  - id: sale2\n    routes: [{path: /s2}]\n    cookie_suffix: s2\n    total_active_users: 1\n    new_users_per_minute: 1\n  - id: sale", 1))
	diffs := RoomDiffs(from, to)
	if len(diffs) != 2 {
		t.Fatalf("diffs %+v, want the room added and other", diffs)
	}
	if diffs[0].Room != "sale2" || diffs[0].Before != nil || diffs[0].After["total_active_users"] != 1 {
		t.Errorf("added room %+v", diffs[0])
	}
	d := diffs[1]
	if d.Room != "other" || d.Before["total_active_users"] != 10 || d.After["total_active_users"] != 12 || d.After["queue_all"] != true || len(d.After) != 2 {
		t.Errorf("changed room %+v", d)
	}
}

// TestRoomDiffsWebhooks: a reload that changes a room's webhooks says so,
// without their secrets or URLs' paths.
func TestRoomDiffsWebhooks(t *testing.T) {
	from := mustParseConfig(t, hookConfig)
	to := mustParseConfig(t, strings.Replace(hookConfig, "secret: webhook-secret-0123456789\n",
		"secret: webhook-secret-9876543210\n        events: [queueing.*]\n", 1))
	diffs := RoomDiffs(from, to)
	if len(diffs) != 1 || diffs[0].Room != "sale" || len(diffs[0].After) != 1 {
		t.Fatalf("diffs %+v, want sale's webhooks", diffs)
	}
	if b, a := compactJSON(diffs[0].Before["webhooks"]), compactJSON(diffs[0].After["webhooks"]); b != `[{"name":"ops","secret":"(set)","url":"https://hooks.example/…"}]` ||
		a != `[{"events":["queueing.*"],"name":"ops","secret":"(set)","url":"https://hooks.example/…"}]` {
		t.Errorf("webhooks before %s, after %s", b, a)
	}
	noSecrets(t, "the diff", compactJSON(diffs))
	for _, c := range roomChanges(from, to) {
		noSecrets(t, "the log of the change", c.text)
	}
}

// TestWebhooksEndpoint: GET /api/v1/webhooks lists the webhooks with
// their counts, never a secret or a URL's path.
func TestWebhooksEndpoint(t *testing.T) {
	a := newAPITest(t, nil, hookConfig)
	bus := notify.New(notify.Options{})
	defer bus.Close()
	bus.SetWebhooks([]notify.WebhookConfig{{Room: "sale", Name: "ops", URL: "https://hooks.example/usher/PATH-TOKEN?k=QUERY-TOKEN",
		Secret: []byte("webhook-secret-0123456789"), Events: []string{"queueing.*"}, MaxQueue: 7}})
	a.h = New(Options{Token: writeToken, Tokens: []Token{{Name: "viewer", Secret: readToken}}, Layers: a.layers, Rooms: a.h.rooms, Events: bus})
	rec := a.do(t, "GET", "/api/v1/webhooks", readToken, "", "")
	body := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.Contains(body, `"name":"ops"`) || !strings.Contains(body, `"target":"https://hooks.example/…"`) ||
		!strings.Contains(body, `"max_queue":7`) || !strings.Contains(body, `"dropped":0`) {
		t.Fatalf("GET /api/v1/webhooks: %d %s", rec.Code, body)
	}
	for _, secret := range []string{"webhook-secret", "PATH-TOKEN", "QUERY-TOKEN"} {
		if strings.Contains(body, secret) {
			t.Errorf("GET /api/v1/webhooks shows %q: %s", secret, body)
		}
	}
	if rec := a.do(t, "GET", "/api/v1/webhooks?room=other", readToken, "", ""); rec.Code != http.StatusOK || rec.Body.String() != "{\"webhooks\":[]}\n" {
		t.Errorf("?room=other: %d %q", rec.Code, rec.Body)
	}
	if rec := a.do(t, "GET", "/api/v1/webhooks?room=nosuch", readToken, "", ""); rec.Code != http.StatusNotFound {
		t.Errorf("?room=nosuch: %d %s", rec.Code, rec.Body)
	}
	if rec := a.do(t, "GET", "/api/v1/webhooks", "", "", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("no token: %d", rec.Code)
	}
}
