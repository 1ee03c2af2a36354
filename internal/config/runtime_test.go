package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

const runtimeBase = `origin: http://127.0.0.1:3000
rooms:
  - id: sale
    name: Big Sale
    routes:
      - host: shop.example
        path: /sale
    cookie_suffix: sale
    total_active_users: 200
    new_users_per_minute: 300
    events:
      - name: drop
        event_start_time: 2026-12-01T10:00:00Z
        event_end_time: 2026-12-01T12:00:00Z
        total_active_users: 400
    rules:
      - description: office
        expression: ip.in_cidr("10.0.0.0/8")
  - id: other
    routes:
      - path: /other
    cookie_suffix: other
    total_active_users: 10
    new_users_per_minute: 10
`

// overrides builds a RoomOverrides of field to JSON value.
func overrides(fields map[string]string) RoomOverrides {
	ov := RoomOverrides{}
	for k, v := range fields {
		ov[k] = Override{Value: json.RawMessage(v), At: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), By: "ops"}
	}
	return ov
}

func TestWithRuntimeOverrides(t *testing.T) {
	c := MustParse(t, runtimeBase)
	rt := &Runtime{}
	rt.SetRoom("sale", overrides(map[string]string{
		"total_active_users":         `500`,
		"queue_all":                  `true`,
		"session_duration":           `"90s"`,
		"cookie_attributes.samesite": `"strict"`,
		"client_limit":               `{"new_visitors_per_minute": 20}`,
	}))
	rt.SetRoom("gone", overrides(map[string]string{"queue_all": `true`}))
	eff, err := c.WithRuntime(rt)
	if err != nil {
		t.Fatal(err)
	}
	got := eff.Rooms[0]
	if got.TotalActiveUsers != 500 || !got.QueueAll || got.SessionDuration != 90*time.Second {
		t.Errorf("effective sale: total %d, queue_all %v, session %s; want 500, true, 1m30s", got.TotalActiveUsers, got.QueueAll, got.SessionDuration)
	}
	if got.CookieAttributes != (usher.CookieAttributes{SameSite: "strict", Secure: "auto"}) {
		t.Errorf("cookie attributes %+v: samesite overridden, secure kept", got.CookieAttributes)
	}
	if want := (usher.ClientLimit{NewVisitorsPerMinute: 20, IPv4Prefix: 32, IPv6Prefix: 64, NetworkIPv4Prefix: 24, NetworkIPv6Prefix: 48, OverLimit: "queue"}); got.ClientLimit != want {
		t.Errorf("client_limit %+v, want the block with its defaults %+v", got.ClientLimit, want)
	}
	// What was not overridden follows the file; the file's config is untouched.
	if got.NewUsersPerMinute != 300 || len(got.Events) != 1 || len(got.Rules) != 1 || got.Name != "Big Sale" {
		t.Errorf("effective sale lost file values: %+v", got)
	}
	if c.Rooms[0].TotalActiveUsers != 200 || c.Rooms[0].QueueAll || c.Rooms[0].CookieAttributes.SameSite != "lax" {
		t.Errorf("WithRuntime changed the file's config: %+v", c.Rooms[0])
	}
	if !reflect.DeepEqual(eff.Rooms[1], c.Rooms[1]) {
		t.Errorf("a room without overrides changed")
	}
	if o := c.Orphans(rt); len(o) != 1 || o[0] != "gone" {
		t.Errorf("Orphans = %v, want [gone]", o)
	}
}

func TestWithRuntimeEventsAndRules(t *testing.T) {
	c := MustParse(t, runtimeBase)
	rt := &Runtime{}
	rt.SetRoom("sale", overrides(map[string]string{
		"events": `[{"name":"late","event_start_time":"2026-12-02T10:00:00Z","event_end_time":"2026-12-02T11:00:00Z","queue_all":true},
		            {"name":"early","event_start_time":"2026-12-01T10:00:00Z","event_end_time":"2026-12-01T11:00:00Z"}]`,
		"rules": `[{"expression":"path == \"/x\"","enabled":false}]`,
	}))
	eff, err := c.WithRuntime(rt)
	if err != nil {
		t.Fatal(err)
	}
	ev := eff.Rooms[0].Events
	if len(ev) != 2 || ev[0].Name != "early" || ev[1].Name != "late" || ev[1].Overrides.QueueAll == nil {
		t.Errorf("events %+v: the runtime list replaces the file's, sorted by start", ev)
	}
	rl := eff.Rooms[0].Rules
	if len(rl) != 1 || rl[0].Enabled || rl[0].Action != "bypass_waiting_room" {
		t.Errorf("rules %+v: the runtime list, with the default action", rl)
	}
}

func TestWithRuntimeProblems(t *testing.T) {
	cases := []struct {
		name     string
		fields   map[string]string
		decoding bool
		want     string
	}{
		{"wrong type", map[string]string{"total_active_users": `"lots"`}, true,
			`rooms[0] (sale): total_active_users: must be an integer, got "lots"`},
		{"float", map[string]string{"total_active_users": `1.5`}, true,
			`rooms[0] (sale): total_active_users: must be an integer, got 1.5`},
		{"unknown field", map[string]string{"totl_active_users": `5`}, true,
			`rooms[0] (sale): unknown field "totl_active_users"`},
		{"unknown cookie key", map[string]string{"cookie_attributes.domain": `"x"`}, true,
			`rooms[0] (sale): unknown field "cookie_attributes.domain"`},
		{"id", map[string]string{"id": `"sale2"`}, true,
			`rooms[0] (sale): id: a room's id cannot change at runtime`},
		{"shards", map[string]string{"shards": `3`}, true,
			`rooms[0] (sale): shards: a room's shards cannot change at runtime: its waiters are spread over them as they arrive`},
		{"shards as the file has them", map[string]string{"shards": `1`}, true,
			`rooms[0] (sale): shards: a room's shards cannot change at runtime`},
		{"duration without unit", map[string]string{"session_duration": `300`}, true,
			`rooms[0] (sale): session_duration: must be a duration with a unit, got 300`},
		{"not JSON", map[string]string{"queue_all": `tru`}, true,
			`rooms[0] (sale): queue_all: not valid JSON`},
		{"key twice", map[string]string{"client_limit": `{"ipv4_prefix": 24, "ipv4_prefix": 16}`}, true,
			`rooms[0] (sale): client_limit: field "ipv4_prefix" is set twice`},
		{"limit zero", map[string]string{"total_active_users": `0`}, false,
			`rooms[0] (sale): total_active_users: must be at least 1, got 0`},
		{"two bad values", map[string]string{"total_active_users": `-5`, "session_duration": `"soon"`}, true,
			"rooms[0] (sale): total_active_users: must be at least 1, got -5"},
		{"two bad values, other", map[string]string{"total_active_users": `-5`, "session_duration": `"soon"`}, true,
			`rooms[0] (sale): session_duration: must be a duration like "90s" or "5m", got "soon"`},
		{"unknown and bad", map[string]string{"total_activ_users": `5`, "queueing_method": `"lifo"`}, true,
			`rooms[0] (sale): queueing_method: must be fifo, random, passthrough or reject, got "lifo"`},
		{"limit negative", map[string]string{"new_users_per_minute": `-5`}, false,
			`rooms[0] (sale): new_users_per_minute: must be at least 1, got -5`},
		{"method", map[string]string{"queueing_method": `"lifo"`}, false,
			`rooms[0] (sale): queueing_method: must be fifo, random, passthrough or reject, got "lifo"`},
		{"cookie clash", map[string]string{"cookie_suffix": `"other"`, "routes": `[{"path": "/other/x"}]`}, false,
			`rooms[1] (other): cookie_suffix: cookie __usher_wr_other (any host, path /other) overlaps the cookie of rooms[0] (sale)`},
		{"overlapping events", map[string]string{"events": `[
			{"name":"a","event_start_time":"2026-12-01T10:00:00Z","event_end_time":"2026-12-01T12:00:00Z"},
			{"name":"b","event_start_time":"2026-12-01T11:00:00Z","event_end_time":"2026-12-01T13:00:00Z"}]`}, false,
			`rooms[0] (sale): events[1] (b): its window, 2026-12-01T11:00:00Z to 2026-12-01T13:00:00Z, overlaps the window of events[0] (a)`},
		{"event wrong type", map[string]string{"events": `[{"name":"a","event_start_time":"soon","event_end_time":"2026-12-01T12:00:00Z"}]`}, true,
			`rooms[0] (sale): events[0] (a): event_start_time: must be an RFC 3339 time`},
		{"rule expression", map[string]string{"rules": `[{"description":"x","expression":"hots == 1"}]`}, false,
			`rooms[0] (sale): rules[0] ("x"): expression:`},
		{"page missing", map[string]string{"custom_page_html": `""`}, true,
			`rooms[0] (sale): custom_page_html: must name a template file`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := MustParse(t, runtimeBase)
			rt := &Runtime{}
			rt.SetRoom("sale", overrides(tc.fields))
			_, err := c.WithRuntime(rt)
			var v *ValidationError
			if !errors.As(err, &v) {
				t.Fatalf("err = %v, want a *ValidationError", err)
			}
			if v.Decoding != tc.decoding {
				t.Errorf("Decoding = %v, want %v (%v)", v.Decoding, tc.decoding, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %q, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "line ") {
				t.Errorf("err = %q names a line; runtime values have none", err)
			}
		})
	}
}

func TestWithRuntimePages(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "pages", "sale.html")
	if err := os.MkdirAll(filepath.Dir(page), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, []byte("<p>{{waitTimeFormatted}}</p>"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "usher.yaml")
	if err := os.WriteFile(path, []byte(runtimeBase), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rt := &Runtime{}
	rt.SetRoom("sale", overrides(map[string]string{"custom_page_html": `"pages/sale.html"`}))
	eff, err := c.WithRuntime(rt)
	if err != nil {
		t.Fatal(err)
	}
	if got := eff.Rooms[0].CustomPageHTML; got != page {
		t.Errorf("custom_page_html = %q, want %q (relative to the config file)", got, page)
	}
	rt.SetRoom("sale", overrides(map[string]string{"custom_page_html": `"pages/none.html"`}))
	if _, err := c.WithRuntime(rt); err == nil || !strings.Contains(err.Error(), "rooms[0] (sale): custom_page_html: pages/none.html does not exist") {
		t.Errorf("a missing page: err %v", err)
	}
}

// richRoom is a room with every field away from its default.
func richRoom(t *testing.T) *Config {
	t.Helper()
	return MustParse(t, `origin: http://127.0.0.1:3000
rooms:
  - id: sale
    name: Big Sale
    origin: http://127.0.0.1:3001/shop
    routes:
      - host: www.shop.example
        path: /sale
      - host: checkout.shop.example
    path_case_sensitive: true
    total_active_users: 200
    new_users_per_minute: 300
    session_duration: 7m30s
    disable_session_renewal: true
    queueing_method: random
    queue_all: true
    suspended: true
    queueing_status_code: 429
    json_response_enabled: true
    cookie_suffix: sale
    cookie_attributes: {samesite: none, secure: always}
    custom_page_html: pages/sale.html
    default_template_language: de-DE
    refresh_interval: 7s
    client_limit: {new_visitors_per_minute: 20, ipv4_prefix: 24, ipv6_prefix: 56, over_limit: reject}
    proof_of_work: {difficulty: 12, always: true}
    ticket_binding: {client_prefix: true, user_agent: true, ipv4_prefix: 16, ipv6_prefix: 40}
    autopilot:
      min_new_users_per_minute: 30
      max_new_users_per_minute: 900
      concurrency: true
      min_total_active_users: 20
      max_total_active_users: 600
      latency_percentile: 95
      latency_sigma: 2.5
      latency_factor: 1.8
      latency_target: 750ms
      error_target: 0.02
      baseline_samples: 30
      decrease: 0.6
      recover: 0.3
      max_changes_per_minute: 4
      health_url: http://127.0.0.1:3001/health
      probe_interval: 2s
      probe_timeout: 1500ms
    events:
      - name: drop
        prequeue_start_time: 2026-12-01T09:30:00+01:00
        event_start_time: 2026-12-01T10:00:00+01:00
        event_end_time: 2026-12-01T12:00:00+01:00
        shuffle_at_event_start: true
        total_active_users: 1
        new_users_per_minute: 2
        session_duration: 11s
        disable_session_renewal: false
        queueing_method: fifo
        queue_all: false
        queueing_status_code: 503
        json_response_enabled: false
        custom_page_html: pages/drop.html
        default_template_language: fr
        refresh_interval: 3s
        client_limit: {new_visitors_per_minute: 5}
        proof_of_work: {difficulty: 3}
        autopilot: {enabled: false}
    rules:
      - description: office
        expression: ip.in_cidr("10.0.0.0/8")
        enabled: false
`)
}

// TestEncodeRoomRoundTrip: every field a room has, encoded and decoded
// back as runtime overrides, gives the same room.
func TestEncodeRoomRoundTrip(t *testing.T) {
	c := richRoom(t)
	want := c.Rooms[0]
	ov := RoomOverrides{}
	for k, v := range EncodeRoom(&want) {
		if k == "id" {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		ov[k] = Override{Value: b}
	}
	// The base the overrides go over: the same room with nothing set.
	base := MustParse(t, "origin: http://127.0.0.1:3000\nrooms:\n  - id: sale\n    total_active_users: 1\n    new_users_per_minute: 1\n")
	rt := &Runtime{}
	rt.SetRoom("sale", ov)
	eff, err := base.WithRuntime(rt)
	if err != nil {
		t.Fatal(err)
	}
	if got := eff.Rooms[0]; !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
}

// TestEncodeCoversEveryField: changing any field of a room's settings, an
// event's overrides or a rule changes its encoding, so a field added to
// usher's types cannot be left out of the API (and dropped when an event
// is edited).
func TestEncodeCoversEveryField(t *testing.T) {
	c := richRoom(t)
	base := c.Rooms[0]
	enc := func(r *usher.Room) string {
		b, err := json.Marshal(EncodeRoom(r))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	was := enc(&base)
	check := func(what string, mutate func()) {
		t.Helper()
		mutate()
		if enc(&base) == was {
			t.Errorf("%s: changing it leaves EncodeRoom's answer the same: add it to encode.go", what)
		}
		base = c.Rooms[0]
		base.Events = []usher.Event{c.Rooms[0].Events[0]}
		base.Rules = []usher.Rule{c.Rooms[0].Rules[0]}
	}
	base.Events = []usher.Event{c.Rooms[0].Events[0]}
	base.Rules = []usher.Rule{c.Rooms[0].Rules[0]}
	roomV := reflect.ValueOf(&base).Elem()
	for i := range roomV.NumField() {
		f := roomV.Type().Field(i)
		if f.Name == "Settings" {
			continue
		}
		check("Room."+f.Name, func() { change(t, roomV.Field(i)) })
	}
	setV := roomV.FieldByName("Settings")
	for i := range setV.NumField() {
		check("Settings."+setV.Type().Field(i).Name, func() { change(t, setV.Field(i)) })
	}
	for _, sub := range []string{"ClientLimit", "ProofOfWork", "Autopilot"} {
		s := setV.FieldByName(sub)
		for i := range s.NumField() {
			check("Settings."+sub+"."+s.Type().Field(i).Name, func() { change(t, s.Field(i)) })
		}
	}
	evV := func() reflect.Value { return reflect.ValueOf(&base.Events[0]).Elem() }
	for i := range evV().NumField() {
		if evV().Type().Field(i).Name == "Overrides" {
			continue
		}
		check("Event."+evV().Type().Field(i).Name, func() {
			base.Events = []usher.Event{c.Rooms[0].Events[0]}
			change(t, evV().Field(i))
		})
	}
	for i := range evV().FieldByName("Overrides").NumField() {
		check("Overrides."+evV().FieldByName("Overrides").Type().Field(i).Name, func() {
			base.Events = []usher.Event{c.Rooms[0].Events[0]}
			change(t, evV().FieldByName("Overrides").Field(i))
		})
	}
	ruleV := func() reflect.Value { return reflect.ValueOf(&base.Rules[0]).Elem() }
	for i := range ruleV().NumField() {
		check("Rule."+ruleV().Type().Field(i).Name, func() {
			base.Rules = []usher.Rule{c.Rooms[0].Rules[0]}
			change(t, ruleV().Field(i))
		})
	}
}

// change sets v to another value of its type: a number plus 1, a bool
// flipped, a string extended, a time moved, a pointer set or cleared, a
// struct's first field changed, a slice grown.
func change(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Float64:
		v.SetFloat(v.Float() + 0.125)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
			change(t, v.Elem())
		} else {
			v.Set(reflect.Zero(v.Type()))
		}
	case reflect.Struct:
		if tm, ok := v.Addr().Interface().(*time.Time); ok {
			*tm = tm.Add(time.Minute)
			return
		}
		change(t, v.Field(0))
	case reflect.Slice:
		v.Set(reflect.Append(v, reflect.New(v.Type().Elem()).Elem()))
	default:
		t.Fatalf("change: no rule for %s", v.Type())
	}
}

// TestWithRuntimeShardedRoomStaysFIFO: a room the file spreads over
// shards cannot be made random at runtime, in its settings or in an event
// (a write token would otherwise turn a sharded line into a draw over the
// front shard only); a fifo one can still be made reject.
func TestWithRuntimeShardedRoomStaysFIFO(t *testing.T) {
	c := MustParse(t, strings.Replace(runtimeBase, "    new_users_per_minute: 300\n", "    new_users_per_minute: 300\n    shards: 3\n", 1))
	for name, tc := range map[string]struct {
		fields map[string]string
		want   string
	}{
		"method": {map[string]string{"queueing_method": `"random"`},
			"rooms[0] (sale): shards: a random room draws from its whole line; spreading it over shards needs fifo"},
		"event": {map[string]string{"events": `[{"name":"lottery","event_start_time":"2026-12-01T10:00:00Z","event_end_time":"2026-12-01T12:00:00Z","queueing_method":"random"}]`},
			"rooms[0] (sale): events[0] (lottery): queueing_method: random draws from the room's whole line"},
	} {
		t.Run(name, func(t *testing.T) {
			rt := &Runtime{}
			rt.SetRoom("sale", overrides(tc.fields))
			if _, err := c.WithRuntime(rt); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	rt := &Runtime{}
	rt.SetRoom("sale", overrides(map[string]string{"queueing_method": `"reject"`}))
	eff, err := c.WithRuntime(rt)
	if err != nil {
		t.Fatalf("reject over a sharded room: %v", err)
	}
	if got := eff.Rooms[0].Shards; got != 3 {
		t.Errorf("reject over a sharded room: shards %d, want 3", got)
	}
}
