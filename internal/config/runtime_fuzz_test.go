package config

import (
	"encoding/json"
	"testing"
)

// FuzzRuntime: any field and any bytes as a runtime value either are
// refused with a *ValidationError or give a config that validates; never
// a panic, and the file's config never changes.
func FuzzRuntime(f *testing.F) {
	for _, seed := range []struct{ field, value string }{
		{"total_active_users", `500`},
		{"total_active_users", `"lots"`},
		{"session_duration", `"90s"`},
		{"cookie_attributes.samesite", `"none"`},
		{"client_limit", `{"new_visitors_per_minute": 20, "over_limit": "reject"}`},
		{"events", `[{"name":"a","event_start_time":"2026-12-01T10:00:00Z","event_end_time":"2026-12-01T12:00:00Z"}]`},
		{"rules", `[{"expression":"path == \"/x\"","enabled":false}]`},
		{"routes", `[{"host":"shop.example","path":"/sale"}]`},
		{"ticket_binding", `{"client_prefix": true}`},
		{"id", `"x"`},
		{"name", `{"a":[1,2,{"b":null}]}`},
		{"queue_all", `tru`},
		{"webhooks", `[{"name":"ops","url":"https://hooks.example/x","secret":"0123456789abcdef","events":["queueing.*"],"timeout":"3s","max_queue":5}]`},
		{"webhooks", `[{"name":"a","url":"http://x.example/","secret_file":"/etc/passwd"},{"name":"a"}]`},
		{"webhooks", `[{"name":"v","url":"http://x.example/","secret":"0123456789abcdef","events":["visitor.*"],"visitor_events":0.5}]`},
		{"events", `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`},
	} {
		f.Add(seed.field, []byte(seed.value))
	}
	f.Fuzz(func(t *testing.T, field string, value []byte) {
		c := MustParse(t, runtimeBase)
		before, _ := json.Marshal([]any{EncodeRoom(&c.Rooms[0]), c.Webhooks})
		rt := &Runtime{}
		rt.SetRoom("sale", RoomOverrides{field: {Value: value}})
		eff, err := c.WithRuntime(rt)
		if err != nil {
			if _, ok := err.(*ValidationError); !ok {
				t.Fatalf("err %T %v, want a *ValidationError", err, err)
			}
		} else if err := eff.Validate(); err != nil {
			t.Fatalf("WithRuntime gave a config that does not validate: %v", err)
		}
		if after, _ := json.Marshal([]any{EncodeRoom(&c.Rooms[0]), c.Webhooks}); string(after) != string(before) {
			t.Fatalf("WithRuntime changed the file's room")
		}
	})
}
