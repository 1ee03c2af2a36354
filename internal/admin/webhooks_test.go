package admin

import (
	"net/http"
	"strings"
	"testing"

	"github.com/usherhq/usher/internal/notify"
)

// hookConfig is apiConfig's sale room with a webhook.
var hookConfig = strings.Replace(apiConfig, "    total_active_users: 200\n", `    total_active_users: 200
    webhooks:
      - name: ops
        url: https://hooks.example/usher/PATH-TOKEN
        secret: webhook-secret-0123456789
`, 1)

// TestWebhooksNeverShown: a room's webhooks are neither settable through
// the API nor shown by it (their secrets and URLs stay in the file), and
// the audit entry of a change goes to Changed once the change is stored.
func TestWebhooksNeverShown(t *testing.T) {
	a := newAPITest(t, nil, hookConfig)
	var got []AuditEntry
	a.h.changed = func(e AuditEntry) { got = append(got, e) }
	etag := a.etag(t, "/api/v1/rooms/sale")
	rec := a.do(t, "PATCH", "/api/v1/rooms/sale", writeToken, etag, `{"webhooks":[{"name":"x","url":"http://169.254.169.254/","secret":"0123456789abcdef"}]}`)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "config file only") {
		t.Fatalf("PATCH webhooks: %d %s, want refused as file-only", rec.Code, rec.Body)
	}
	if len(got) != 0 || a.version(t) != 0 {
		t.Fatalf("a refused change was reported (%d) or stored (version %d)", len(got), a.version(t))
	}
	rec = a.do(t, "PATCH", "/api/v1/rooms/sale", writeToken, etag, `{"queue_all":true}`)
	if rec.Code != http.StatusOK {
		t.Fatalf("PATCH queue_all: %d %s", rec.Code, rec.Body)
	}
	if len(got) != 1 || got[0].Version != 1 || got[0].Token != "admin" || got[0].Action != "room.update" || got[0].Room != "sale" {
		t.Fatalf("Changed got %+v, want the room.update of version 1 by admin", got)
	}
	for _, path := range []string{"/api/v1/rooms/sale", "/api/v1/rooms", "/api/v1/audit", "/api/v1/overrides", "/api/v1/status"} {
		body := a.do(t, "GET", path, readToken, "", "").Body.String()
		for _, secret := range []string{"webhook-secret", "PATH-TOKEN", "hooks.example"} {
			if strings.Contains(body, secret) {
				t.Errorf("GET %s shows %q: %s", path, secret, body)
			}
		}
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
