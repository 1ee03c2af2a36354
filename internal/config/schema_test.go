package config

import (
	"strings"
	"testing"
)

// TestSchema: the schema walks every field the decoder takes, a room's
// among them, and finds each one's type, Go field, defaults and rules as
// the decoder and Validate have them.
func TestSchema(t *testing.T) {
	t.Parallel()
	byPath := map[string]SchemaField{}
	for _, f := range Schema() {
		if _, dup := byPath[f.Path]; dup {
			t.Errorf("%s listed twice", f.Path)
		}
		byPath[f.Path] = f
		if f.Type == "" {
			t.Errorf("%s has no type", f.Path)
		}
	}
	for _, name := range RoomFields() {
		if _, ok := byPath["rooms[]."+name]; !ok {
			t.Errorf("room field %s is not in the schema", name)
		}
	}
	want := map[string]SchemaField{
		"listen":                           {Type: "string", Default: "127.0.0.1:8080", GoField: "Listen"},
		"rooms[].total_active_users":       {Type: "integer", Rule: "must be at least 1", GoField: "TotalActiveUsers"},
		"rooms[].session_duration":         {Type: "duration", Default: "5m", Rule: "must be at least 10s", GoField: "SessionDuration"},
		"rooms[].queueing_method":          {Type: "string", Default: "fifo", Rule: "must be fifo, random, passthrough or reject", GoField: "QueueingMethod"},
		"rooms[].refresh_interval":         {Type: "duration", Default: "20s", Rule: "must be from 1s to 5m", GoField: "RefreshInterval"},
		"rooms[].routes":                   {Type: "list of mappings", GoField: "Routes"},
		"rooms[].routes[].path":            {Type: "string", Default: "/", Rule: `must start with "/"`, GoField: "Path"},
		"rooms[].events[].event_end_time":  {Type: "time", GoField: "End"},
		"rooms[].client_limit.ipv4_prefix": {Type: "integer", Default: "32", Rule: "must be from 1 to 32", GoField: "IPv4Prefix"},
		"rooms[].webhooks[].events":        {Type: "list of strings", GoField: "Events"},
		"trusted_proxies":                  {Type: "list of strings", GoField: "TrustedProxies"},
		"ip_lists":                         {Type: "mapping of lists of strings", GoField: "IPListEntries"},
		"store.redis.tls":                  {Type: "mapping", GoField: "TLS"},
		"store.redis.tls.ca_file":          {Type: "string", GoField: "CAFile"},
		"rooms[].autopilot.latency_sigma":  {Type: "number", Default: "3", GoField: "Sigma"},
	}
	for path, w := range want {
		got, ok := byPath[path]
		if !ok {
			t.Errorf("%s is not in the schema", path)
			continue
		}
		if got.Type != w.Type || got.Default != w.Default || got.GoField != w.GoField || (w.Rule != "" && got.Rule != w.Rule) {
			t.Errorf("%s: %+v, want %+v", path, got, w)
		}
		if !strings.HasPrefix(got.GoType, "github.com/usherhq/usher") {
			t.Errorf("%s: Go type %q", path, got.GoType)
		}
	}
}
