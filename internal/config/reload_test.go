package config

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const reloadBase = `listen: 127.0.0.1:8080
origin: http://127.0.0.1:3000
admin:
  listen: 127.0.0.1:9090
  token: t1
store:
  embedded:
    path: ./data
keys:
  - id: k2
    secret: ` + "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=" + `
  - id: k1
    secret: ` + "0101010101010101010101010101010101010101010101010101010101010101" + `
rooms:
  - id: sale
    total_active_users: 10
    new_users_per_minute: 10
`

func TestReloadable(t *testing.T) {
	tests := []struct {
		name string
		edit func(s string) string
		want []string // problems, as Problem.String; nil: reloadable
	}{
		{"same", func(s string) string { return s }, nil},
		{"live changes", func(s string) string {
			s = strings.Replace(s, "origin: http://127.0.0.1:3000", "origin: http://127.0.0.1:3001\ntrusted_proxies: [10.0.0.0/8]\ncountry_header: CF-IPCountry\nip_lists:\n  office: [192.0.2.1]", 1)
			s = strings.Replace(s, "total_active_users: 10", "total_active_users: 20\n    rules:\n      - expression: ip.in_ip_list(\"office\")\n    events:\n      - name: e\n        event_start_time: 2026-12-01T10:00:00Z\n        event_end_time: 2026-12-01T11:00:00Z", 1)
			return s + "  - id: new\n    routes: [{path: /new}]\n    cookie_suffix: new\n    total_active_users: 1\n    new_users_per_minute: 1\n"
		}, nil},
		{"room removed", func(s string) string { return s[:strings.Index(s, "rooms:")] }, nil},
		{"key added", func(s string) string {
			return strings.Replace(s, "keys:\n", "keys:\n  - id: k3\n    secret: "+strings.Repeat("ab", 32)+"\n", 1)
		}, nil},
		{"sealing key removed", func(s string) string {
			i, j := strings.Index(s, "  - id: k2"), strings.Index(s, "  - id: k1")
			return s[:i] + s[j:]
		}, nil},
		{"every key removed", func(s string) string {
			return s[:strings.Index(s, "keys:")] + s[strings.Index(s, "rooms:"):]
		}, []string{"keys: every key is removed, which needs a restart (tickets would then be sealed with the store's generated key, and the ones sealed with these keys would no longer open); keep at least one key"}},
		{"secret changed", func(s string) string {
			return strings.Replace(s, "0101010101", "0202020202", 1)
		}, []string{`keys[1]: key "k1" has a new secret, which needs a restart (tickets sealed with the old secret would no longer open): add a key with a new id instead`}},
		{"secret written differently", func(s string) string {
			return strings.Replace(s, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", 1)
		}, nil},
		{"listeners, token, store, watching", func(s string) string {
			s = strings.Replace(s, "listen: 127.0.0.1:8080", "listen: 127.0.0.1:8081\nwatch_config: true", 1)
			s = strings.Replace(s, "listen: 127.0.0.1:9090", "listen: 127.0.0.1:9091", 1)
			s = strings.Replace(s, "token: t1", "token: t2", 1)
			return strings.Replace(s, "path: ./data", "path: ./other", 1)
		}, []string{
			`listen: changed from "127.0.0.1:8080" to "127.0.0.1:8081", which needs a restart (the listener is opened at start)`,
			`admin.listen: changed from "127.0.0.1:9090" to "127.0.0.1:9091", which needs a restart (the listener is opened at start)`,
			"admin.token: changed, which needs a restart (the admin API takes its token at start)",
			`store.embedded.path: changed from "./data" to "./other", which needs a restart (the store is opened at start)`,
			"watch_config: changed from false to true, which needs a restart (watching starts with usher)",
		}},
		{"room added with shards", func(s string) string {
			return s + "  - id: big\n    routes: [{path: /big}]\n    cookie_suffix: big\n    total_active_users: 1\n    new_users_per_minute: 1\n    shards: 3\n"
		}, nil},
		{"shards written 0, which is 1", func(s string) string {
			return strings.Replace(s, "total_active_users: 10", "total_active_users: 10\n    shards: 0", 1)
		}, nil},
		{"shards changed", func(s string) string {
			return strings.Replace(s, "total_active_users: 10", "total_active_users: 10\n    shards: 3", 1)
		}, []string{
			"rooms[0] (sale): shards: changed from 1 to 3, which needs a restart (a room's waiters are spread over its shards as they arrive, and those already waiting cannot be moved: restart usher once nobody waits in the room)",
		}},
		{"admin removed", func(s string) string {
			return strings.Replace(s, "admin:\n  listen: 127.0.0.1:9090\n  token: t1\n", "", 1)
		}, []string{
			`admin.listen: changed from "127.0.0.1:9090" to none, which needs a restart (the listener is opened at start)`,
			"admin.token: changed, which needs a restart (the admin API takes its token at start)",
		}},
	}
	old := MustParse(t, reloadBase)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := MustParse(t, tt.edit(reloadBase))
			err := old.Reloadable(next)
			var got []string
			var v *ValidationError
			if errors.As(err, &v) {
				for _, p := range v.Problems {
					got = append(got, p.String())
				}
			} else if err != nil {
				t.Fatalf("Reloadable = %v, want nil or a *ValidationError", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestReloadableFiles(t *testing.T) {
	a, err := Load(filepath.Join("testdata", "valid_files.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(filepath.Join("testdata", "valid_files.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Reloadable(b); err != nil {
		t.Errorf("Reloadable(same files) = %v", err)
	}
	// The file's token changes: Load read both, so the contents compare.
	b.Admin.fileToken = "other"
	if err := a.Reloadable(b); err == nil || !strings.Contains(err.Error(), "admin.token") {
		t.Errorf("Reloadable(new token file content) = %v, want an admin.token problem", err)
	}
}
