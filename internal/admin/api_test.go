package admin

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestAPIGetRoom(t *testing.T) {
	a := newAPITest(t, nil, "")
	rec := a.do(t, "GET", "/api/v1/rooms/sale", readToken, "", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET: %d %s", rec.Code, rec.Body)
	}
	v := MustDecode[RoomView](t, rec)
	if v.ETag == "" || rec.Header().Get("ETag") != v.ETag {
		t.Errorf("ETag header %q, body etag %q: want the same, not empty", rec.Header().Get("ETag"), v.ETag)
	}
	if v.Settings["total_active_users"] != 200.0 || v.Settings["session_duration"] != "5m" || v.Settings["name"] != "Big Sale" {
		t.Errorf("settings %v: want the file's values as the file writes them", v.Settings)
	}
	if _, ok := v.Settings["events"]; ok {
		t.Error("settings hold events; they have their own list")
	}
	if len(v.Events.Events) != 1 || v.Events.Events[0]["name"] != "drop" || v.Events.Events[0]["etag"] == "" || v.Events.ETag == "" {
		t.Errorf("events %+v: want drop with its etag", v.Events)
	}
	if len(v.Rules.Rules) != 1 || v.Rules.Rules[0]["index"] != 0.0 || v.Rules.Rules[0]["description"] != "office" {
		t.Errorf("rules %+v: want office at index 0", v.Rules)
	}
	if len(v.Overrides) != 0 || v.Version != 0 {
		t.Errorf("overrides %v, version %d: want none", v.Overrides, v.Version)
	}
	rooms := MustDecode[RoomsView](t, a.do(t, "GET", "/api/v1/rooms", readToken, "", ""))
	if len(rooms.Rooms) != 2 || rooms.Rooms[1].ID != "other" {
		t.Errorf("GET rooms: %+v", rooms)
	}
	if rec := a.do(t, "GET", "/api/v1/rooms/nope", readToken, "", ""); rec.Code != http.StatusNotFound {
		t.Errorf("GET an unknown room: %d", rec.Code)
	}
}

func TestAPIPatchRoom(t *testing.T) {
	a := newAPITest(t, nil, "")
	tag := a.etag(t, "/api/v1/rooms/sale")
	rec := a.do(t, "PATCH", "/api/v1/rooms/sale", writeToken, tag,
		`{"total_active_users": 500, "queue_all": true, "session_duration": "90s", "cookie_attributes": {"samesite": "strict"}}`)
	if rec.Code != http.StatusOK {
		t.Fatalf("PATCH: %d %s", rec.Code, rec.Body)
	}
	v := MustDecode[RoomView](t, rec)
	if v.Settings["total_active_users"] != 500.0 || v.Settings["queue_all"] != true || v.Settings["session_duration"] != "1m30s" {
		t.Errorf("settings after PATCH: %v", v.Settings)
	}
	if ca := v.Settings["cookie_attributes"].(map[string]any); ca["samesite"] != "strict" || ca["secure"] != "auto" {
		t.Errorf("cookie_attributes %v: samesite set, secure kept", ca)
	}
	if v.ETag == tag || rec.Header().Get("ETag") != v.ETag {
		t.Errorf("ETag %q (header %q), was %q: want a new one in both", v.ETag, rec.Header().Get("ETag"), tag)
	}
	o, ok := v.Overrides["total_active_users"]
	if !ok || o.Value != 500.0 || o.File != 200.0 || o.By != "admin" || !o.At.Equal(testNow) {
		t.Errorf("override of total_active_users: %+v (present %v)", o, ok)
	}
	if _, ok := v.Overrides["cookie_attributes.samesite"]; !ok || len(v.Overrides) != 4 {
		t.Errorf("overrides %v: want total_active_users, queue_all, session_duration, cookie_attributes.samesite", v.Overrides)
	}
	if a.version(t) == 0 || v.Version != a.version(t) {
		t.Errorf("version %d in the view, %d in the store", v.Version, a.version(t))
	}
	if n := a.appliedCount(); n != 1 {
		t.Fatalf("applied %d configs, want 1", n)
	}
	if got := a.applied[0].Rooms[0]; got.TotalActiveUsers != 500 || !got.QueueAll {
		t.Errorf("applied room: total %d, queue_all %v", got.TotalActiveUsers, got.QueueAll)
	}
	au := a.audit(t, "")
	if len(au.Entries) != 1 {
		t.Fatalf("audit: %+v", au)
	}
	e := au.Entries[0]
	before, after := e.Before.(map[string]any), e.After.(map[string]any)
	if e.Action != "room.update" || e.Room != "sale" || e.Token != "admin" || e.Target != "rooms/sale" || e.Version != v.Version ||
		before["total_active_users"] != 200.0 || after["total_active_users"] != 500.0 || before["queue_all"] != false || after["queue_all"] != true {
		t.Errorf("audit entry %+v", e)
	}

	// The same value again changes nothing: no new version, no audit.
	rec = a.do(t, "PATCH", "/api/v1/rooms/sale", writeToken, "*", `{"queue_all": true}`)
	if rec.Code != http.StatusOK || a.version(t) != v.Version || len(a.audit(t, "").Entries) != 1 {
		t.Errorf("PATCH with the value in force: %d, version %d (was %d)", rec.Code, a.version(t), v.Version)
	}
	// null drops an override: the file's value is back.
	rec = a.do(t, "PATCH", "/api/v1/rooms/sale", writeToken, v.ETag, `{"total_active_users": null, "cookie_attributes": null}`)
	if rec.Code != http.StatusOK {
		t.Fatalf("PATCH null: %d %s", rec.Code, rec.Body)
	}
	v = MustDecode[RoomView](t, rec)
	if v.Settings["total_active_users"] != 200.0 || len(v.Overrides) != 2 {
		t.Errorf("after null: total %v, overrides %v; want 200 and two overrides left", v.Settings["total_active_users"], v.Overrides)
	}
}

func TestAPIReset(t *testing.T) {
	a := newAPITest(t, nil, "")
	a.do(t, "PATCH", "/api/v1/rooms/sale", writeToken, "*", `{"suspended": true, "new_users_per_minute": 900}`)
	a.do(t, "POST", "/api/v1/rooms/sale/rules", writeToken, "*", `{"expression": "path == \"/x\""}`)
	tag := a.etag(t, "/api/v1/rooms/sale")
	if rec := a.do(t, "DELETE", "/api/v1/rooms/sale/overrides", writeToken, "", ""); rec.Code != http.StatusPreconditionRequired {
		t.Errorf("DELETE overrides without If-Match: %d", rec.Code)
	}
	rec := a.do(t, "DELETE", "/api/v1/rooms/sale/overrides", writeToken, tag, "")
	if rec.Code != http.StatusOK {
		t.Fatalf("DELETE overrides: %d %s", rec.Code, rec.Body)
	}
	v := MustDecode[RoomView](t, rec)
	if v.Settings["suspended"] != false || v.Settings["new_users_per_minute"] != 300.0 || len(v.Rules.Rules) != 1 || len(v.Overrides) != 0 {
		t.Errorf("after reset: %+v", v)
	}
	e := a.audit(t, "?limit=1").Entries[0]
	if e.Action != "room.reset" || e.Before.(map[string]any)["suspended"] != true || e.After.(map[string]any)["suspended"] != false {
		t.Errorf("audit of the reset: %+v", e)
	}
}

func TestAPIEvents(t *testing.T) {
	a := newAPITest(t, nil, "")
	tag := a.etag(t, "/api/v1/rooms/sale/events")
	rec := a.do(t, "POST", "/api/v1/rooms/sale/events", writeToken, tag,
		`{"name": "late drop", "event_start_time": "2026-12-02T10:00:00Z", "event_end_time": "2026-12-02T11:00:00Z", "queue_all": true}`)
	if rec.Code != http.StatusCreated {
		t.Fatalf("POST event: %d %s", rec.Code, rec.Body)
	}
	if loc := rec.Header().Get("Location"); loc != "/api/v1/rooms/sale/events/late%20drop" {
		t.Errorf("Location %q", loc)
	}
	ev := MustDecode[map[string]any](t, rec)
	if ev["name"] != "late drop" || ev["queue_all"] != true || ev["etag"] != rec.Header().Get("ETag") {
		t.Errorf("created event %v", ev)
	}
	got := MustDecode[EventsView](t, a.do(t, "GET", "/api/v1/rooms/sale/events", readToken, "", ""))
	if len(got.Events) != 2 || got.Events[0]["name"] != "drop" || got.Events[1]["name"] != "late drop" {
		t.Fatalf("events after POST: %v", got.Events)
	}
	// PATCH: rename, move, drop an override with null.
	evTag := a.etag(t, "/api/v1/rooms/sale/events/late%20drop")
	rec = a.do(t, "PATCH", "/api/v1/rooms/sale/events/late%20drop", writeToken, evTag,
		`{"name": "early drop", "event_start_time": "2026-11-30T10:00:00Z", "event_end_time": "2026-11-30T11:00:00Z", "queue_all": null}`)
	if rec.Code != http.StatusOK {
		t.Fatalf("PATCH event: %d %s", rec.Code, rec.Body)
	}
	ev = MustDecode[map[string]any](t, rec)
	if _, ok := ev["queue_all"]; ok || ev["name"] != "early drop" {
		t.Errorf("patched event %v: renamed, queue_all gone", ev)
	}
	got = MustDecode[EventsView](t, a.do(t, "GET", "/api/v1/rooms/sale/events", readToken, "", ""))
	if len(got.Events) != 2 || got.Events[0]["name"] != "early drop" {
		t.Errorf("events after PATCH: %v (sorted by start)", got.Events)
	}
	// The old name is gone; the stale tag is refused.
	if rec := a.do(t, "DELETE", "/api/v1/rooms/sale/events/late%20drop", writeToken, evTag, ""); rec.Code != http.StatusNotFound {
		t.Errorf("DELETE by the old name: %d %s", rec.Code, rec.Body)
	}
	rec = a.do(t, "DELETE", "/api/v1/rooms/sale/events/drop", writeToken, a.etag(t, "/api/v1/rooms/sale/events/drop"), "")
	if rec.Code != http.StatusNoContent {
		t.Fatalf("DELETE event: %d %s", rec.Code, rec.Body)
	}
	v := a.room(t, "sale")
	if len(v.Events.Events) != 1 || v.Overrides["events"].File == nil {
		t.Errorf("after DELETE: events %v, override %+v", v.Events.Events, v.Overrides["events"])
	}
	au := a.audit(t, "?room=sale")
	actions := []string{}
	for _, e := range au.Entries {
		actions = append(actions, e.Action+" "+e.Target)
	}
	want := "event.delete rooms/sale/events/drop,event.update rooms/sale/events/late drop,event.create rooms/sale/events/late drop"
	if strings.Join(actions, ",") != want {
		t.Errorf("audit: %v, want %s", actions, want)
	}
	if au.Entries[2].Before != nil || au.Entries[2].After.(map[string]any)["name"] != "late drop" || au.Entries[0].After != nil {
		t.Errorf("audit before/after: %+v", au.Entries)
	}
}

func TestAPIRules(t *testing.T) {
	a := newAPITest(t, nil, "")
	rec := a.do(t, "POST", "/api/v1/rooms/sale/rules", writeToken, a.etag(t, "/api/v1/rooms/sale/rules"),
		`{"description": "monitors", "expression": "user_agent.matches(\"(?i)pingdom\") && path == \"/health\""}`)
	if rec.Code != http.StatusCreated {
		t.Fatalf("POST rule: %d %s", rec.Code, rec.Body)
	}
	r := MustDecode[map[string]any](t, rec)
	if r["index"] != 1.0 || r["enabled"] != true || r["action"] != "bypass_waiting_room" || rec.Header().Get("Location") != "/api/v1/rooms/sale/rules/1" {
		t.Errorf("created rule %v at %q", r, rec.Header().Get("Location"))
	}
	rec = a.do(t, "PATCH", "/api/v1/rooms/sale/rules/0", writeToken, a.etag(t, "/api/v1/rooms/sale/rules/0"), `{"enabled": false}`)
	if rec.Code != http.StatusOK || MustDecode[map[string]any](t, rec)["enabled"] != false {
		t.Fatalf("PATCH rule: %d %s", rec.Code, rec.Body)
	}
	if a.applied[len(a.applied)-1].Rooms[0].Rules[0].Enabled {
		t.Error("the disabled rule is still enabled in the config applied")
	}
	rec = a.do(t, "DELETE", "/api/v1/rooms/sale/rules/0", writeToken, a.etag(t, "/api/v1/rooms/sale/rules/0"), "")
	if rec.Code != http.StatusNoContent {
		t.Fatalf("DELETE rule: %d %s", rec.Code, rec.Body)
	}
	got := MustDecode[RulesView](t, a.do(t, "GET", "/api/v1/rooms/sale/rules", readToken, "", ""))
	if len(got.Rules) != 1 || got.Rules[0]["description"] != "monitors" || got.Rules[0]["index"] != 0.0 {
		t.Errorf("rules after DELETE: %v", got.Rules)
	}
	if e := a.audit(t, "?limit=1").Entries[0]; e.Action != "rule.delete" || e.Before.(map[string]any)["description"] != "office" {
		t.Errorf("audit: %+v", e)
	}
}

// TestAPIBadInput: every bad request gets a clear error naming the field,
// and nothing changes: no new version, nothing applied, no audit entry.
func TestAPIBadInput(t *testing.T) {
	const room, events, rules = "/api/v1/rooms/sale", "/api/v1/rooms/sale/events", "/api/v1/rooms/sale/rules"
	cases := []struct {
		name         string
		method, path string
		token        string
		ifMatch      string // "tag": the path's current ETag (of tagPath when set)
		tagPath      string
		body         string
		status       int
		code, field  string
		msg          string
	}{
		{"unknown field", "PATCH", room, writeToken, "tag", "", `{"totl_active_users": 5}`, 400, "invalid", "totl_active_users",
			`rooms[0] (sale): unknown field "totl_active_users"`},
		{"wrong type", "PATCH", room, writeToken, "tag", "", `{"total_active_users": "lots"}`, 400, "invalid", "total_active_users",
			`rooms[0] (sale): total_active_users: must be an integer, got "lots"`},
		{"wrong type bool", "PATCH", room, writeToken, "tag", "", `{"queue_all": "on"}`, 400, "invalid", "queue_all",
			`rooms[0] (sale): queue_all: must be true or false, got "on"`},
		{"limit zero", "PATCH", room, writeToken, "tag", "", `{"total_active_users": 0}`, 422, "invalid", "total_active_users",
			`rooms[0] (sale): total_active_users: must be at least 1, got 0`},
		{"limit negative", "PATCH", room, writeToken, "tag", "", `{"new_users_per_minute": -1}`, 422, "invalid", "new_users_per_minute",
			`rooms[0] (sale): new_users_per_minute: must be at least 1, got -1`},
		{"duration without unit", "PATCH", room, writeToken, "tag", "", `{"session_duration": 300}`, 400, "invalid", "session_duration",
			`session_duration: must be a duration with a unit, got 300`},
		{"samesite none without secure", "PATCH", room, writeToken, "tag", "", `{"cookie_attributes": {"samesite": "none"}}`, 422, "invalid", "cookie_attributes",
			`samesite none needs secure always`},
		{"unknown cookie key", "PATCH", room, writeToken, "tag", "", `{"cookie_attributes": {"domain": "x"}}`, 400, "invalid", "cookie_attributes.domain",
			`cookie_attributes: unknown field "domain"`},
		{"id", "PATCH", room, writeToken, "tag", "", `{"id": "sale2"}`, 400, "invalid", "id", `rooms[0] (sale): id: a room's id cannot change`},
		{"events in a room patch", "PATCH", room, writeToken, "tag", "", `{"events": []}`, 400, "invalid", "events", `/api/v1/rooms/sale/events`},
		{"not an object", "PATCH", room, writeToken, "tag", "", `[1]`, 400, "invalid", "", `body: must be a JSON object`},
		{"not JSON", "PATCH", room, writeToken, "tag", "", `{"queue_all": tru}`, 400, "invalid", "queue_all", `body: queue_all: not valid JSON`},
		{"field twice", "PATCH", room, writeToken, "tag", "", `{"queue_all": true, "queue_all": false}`, 400, "invalid", "queue_all", `field "queue_all" is set twice`},
		{"empty", "PATCH", room, writeToken, "tag", "", `{}`, 400, "invalid", "", `name at least one field`},
		{"two values", "PATCH", room, writeToken, "tag", "", `{"queue_all": true} {}`, 400, "invalid", "", `found more`},
		{"too large", "PATCH", room, writeToken, "tag", "", `{"name": "` + strings.Repeat("x", maxWriteBody) + `"}`, 413, "too_large", "", `larger than`},
		{"no If-Match", "PATCH", room, writeToken, "", "", `{"queue_all": true}`, 428, "precondition_required", "", `If-Match is required`},
		{"stale If-Match", "PATCH", room, writeToken, `"stale"`, "", `{"queue_all": true}`, 412, "precondition_failed", "", `room "sale" changed since that ETag`},
		{"other resource's tag", "PATCH", room, writeToken, "tag", events, `{"queue_all": true}`, 412, "precondition_failed", "", `changed since`},
		{"read-only token", "PATCH", room, readToken, "*", "", `{"queue_all": true}`, 403, "forbidden", "", `token "viewer" may only read`},
		{"read-only token deletes", "DELETE", room + "/overrides", readToken, "*", "", ``, 403, "forbidden", "", `may only read`},
		{"bad token", "PATCH", room, "nope", "*", "", `{"queue_all": true}`, 401, "unauthorized", "", `invalid bearer token`},
		{"no token", "GET", room, "", "", "", ``, 401, "unauthorized", "", `missing bearer token`},
		{"no room", "PATCH", "/api/v1/rooms/nope", writeToken, "*", "", `{"queue_all": true}`, 404, "not_found", "", `no room "nope"`},
		{"overlapping event", "POST", events, writeToken, "tag", "", `{"name": "x", "event_start_time": "2026-12-01T11:00:00Z", "event_end_time": "2026-12-01T13:00:00Z"}`,
			422, "invalid", "events[1]", `rooms[0] (sale): events[1] (x): its window, 2026-12-01T11:00:00Z to 2026-12-01T13:00:00Z, overlaps the window of events[0] (drop)`},
		{"event name taken", "POST", events, writeToken, "tag", "", `{"name": "drop", "event_start_time": "2027-12-01T11:00:00Z", "event_end_time": "2027-12-01T13:00:00Z"}`,
			422, "invalid", "name", `an event named "drop" exists already`},
		{"event name not a string", "POST", events, writeToken, "tag", "", `{"name": 5, "event_start_time": "2027-12-01T11:00:00Z", "event_end_time": "2027-12-01T13:00:00Z"}`,
			400, "invalid", "name", `body: name: must be a string, got 5`},
		{"event unknown field", "POST", events, writeToken, "tag", "", `{"name": "x", "starts": "2027-12-01T11:00:00Z"}`,
			400, "invalid", "events[1].starts", `rooms[0] (sale): events[1] (x): unknown field "starts"`},
		{"event time without zone", "PATCH", events + "/drop", writeToken, "tag", "", `{"event_end_time": "2026-12-01 13:00"}`,
			400, "invalid", "events[0].event_end_time", `has no time zone`},
		{"event end before start", "PATCH", events + "/drop", writeToken, "tag", "", `{"event_end_time": "2026-12-01T09:00:00Z"}`,
			422, "invalid", "events[0].event_end_time", `must be after event_start_time`},
		{"event override limit", "PATCH", events + "/drop", writeToken, "tag", "", `{"new_users_per_minute": 0}`,
			422, "invalid", "events[0].new_users_per_minute", `must be at least 1, got 0`},
		{"no event", "PATCH", events + "/nope", writeToken, "*", "", `{"queue_all": true}`, 404, "not_found", "", `no event named "nope"`},
		{"event stale tag", "DELETE", events + "/drop", writeToken, `"old"`, "", ``, 412, "precondition_failed", "", `event "drop" of room "sale" changed`},
		{"rule expression", "POST", rules, writeToken, "tag", "", `{"description": "x", "expression": "hots == \"a\""}`,
			422, "invalid", "rules[1].expression", `rooms[0] (sale): rules[1] ("x"): expression:`},
		{"rule enabled type", "PATCH", rules + "/0", writeToken, "tag", "", `{"enabled": "yes"}`,
			400, "invalid", "rules[0].enabled", `must be true or false, got "yes"`},
		{"rule index", "PATCH", rules + "/7", writeToken, "*", "", `{"enabled": false}`, 404, "not_found", "", `has no rule "7"`},
		{"rule index not a number", "DELETE", rules + "/x", writeToken, "*", "", ``, 404, "not_found", "", `has no rule "x"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newAPITest(t, nil, "")
			ifMatch := tc.ifMatch
			if ifMatch == "tag" {
				p := tc.path
				if tc.tagPath != "" {
					p = tc.tagPath
				}
				ifMatch = a.etag(t, p)
			}
			rec := a.do(t, tc.method, tc.path, tc.token, ifMatch, tc.body)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tc.status, rec.Body)
			}
			e := apiErr(t, rec)
			if e.Code != tc.code || e.Field != tc.field || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("error %+v, want code %q, field %q, message containing %q", e, tc.code, tc.field, tc.msg)
			}
			if v := a.version(t); v != 0 || a.appliedCount() != 0 || len(a.audit(t, "").Entries) != 0 {
				t.Errorf("a refused request changed something: version %d, %d applied", v, a.appliedCount())
			}
		})
	}
}

// TestAPIConcurrentWriters: two writers with the same ETag: one wins,
// the other is told the room changed.
func TestAPIConcurrentWriters(t *testing.T) {
	a := newAPITest(t, nil, "")
	tag := a.etag(t, "/api/v1/rooms/sale")
	codes := make([]int, 2)
	var wg sync.WaitGroup
	for i, body := range []string{`{"total_active_users": 1}`, `{"total_active_users": 2}`} {
		wg.Go(func() { codes[i] = a.do(t, "PATCH", "/api/v1/rooms/sale", writeToken, tag, body).Code })
	}
	wg.Wait()
	if !(codes[0] == 200 && codes[1] == 412 || codes[0] == 412 && codes[1] == 200) {
		t.Fatalf("statuses %v, want one 200 and one 412", codes)
	}
	if n := len(a.audit(t, "").Entries); n != 1 {
		t.Errorf("%d audit entries, want 1", n)
	}
}

func TestAPIAuditPages(t *testing.T) {
	a := newAPITest(t, nil, "")
	for i := range 5 {
		room := "sale"
		if i%2 == 1 {
			room = "other"
		}
		body := `{"total_active_users": ` + strconv.Itoa(i+1) + `}`
		if rec := a.do(t, "PATCH", "/api/v1/rooms/"+room, writeToken, "*", body); rec.Code != 200 {
			t.Fatalf("PATCH %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	all := a.audit(t, "")
	if len(all.Entries) != 5 || all.NextBefore != 0 || all.Entries[0].Version <= all.Entries[4].Version {
		t.Fatalf("audit: %+v", all)
	}
	p1 := a.audit(t, "?limit=2")
	if len(p1.Entries) != 2 || p1.NextBefore != p1.Entries[1].Version {
		t.Fatalf("page 1: %+v", p1)
	}
	p2 := a.audit(t, "?limit=2&before="+itoa(p1.NextBefore))
	if len(p2.Entries) != 2 || p2.Entries[0].Version != all.Entries[2].Version {
		t.Fatalf("page 2: %+v", p2)
	}
	sale := a.audit(t, "?room=sale&limit=2")
	if len(sale.Entries) != 2 || sale.Entries[0].Room != "sale" || sale.Entries[1].Room != "sale" || sale.NextBefore == 0 {
		t.Fatalf("sale's page: %+v", sale)
	}
	rest := a.audit(t, "?room=sale&limit=2&before="+itoa(sale.NextBefore))
	if len(rest.Entries) != 1 || rest.NextBefore != 0 {
		t.Fatalf("sale's last page: %+v", rest)
	}
	for _, q := range []string{"?limit=0", "?limit=x", "?before=-1"} {
		if rec := a.do(t, "GET", "/api/v1/audit"+q, readToken, "", ""); rec.Code != 400 {
			t.Errorf("GET audit%s: %d", q, rec.Code)
		}
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func TestAPIStatusAndLegacyPaths(t *testing.T) {
	a := newAPITest(t, nil, "")
	a.do(t, "PATCH", "/api/v1/rooms/sale", writeToken, "*", `{"queue_all": true}`)
	st := MustDecode[StatusView](t, a.do(t, "GET", "/api/v1/status", readToken, "", ""))
	if len(st.Rooms) != 2 || st.Rooms[0].ID != "sale" || !st.Rooms[0].QueueAll || st.Rooms[0].Overrides != 1 ||
		st.Rooms[0].Active != 3 || st.Rooms[0].Phase != "none" || st.Version == 0 {
		t.Errorf("status: %+v", st)
	}
	for _, p := range []string{"/v1/rooms", "/v1/rooms/sale/status", "/api/v1/rooms/sale/status", "/api/v1/overrides"} {
		if rec := a.do(t, "GET", p, readToken, "", ""); rec.Code != http.StatusOK {
			t.Errorf("GET %s: %d %s", p, rec.Code, rec.Body)
		}
	}
	ov := MustDecode[OverridesView](t, a.do(t, "GET", "/api/v1/overrides", readToken, "", ""))
	if o := ov.Rooms["sale"]["queue_all"]; o.Value != true || o.File != false || ov.Version == 0 {
		t.Errorf("overrides: %+v", ov)
	}
}
