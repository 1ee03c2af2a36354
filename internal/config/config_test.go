package config

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/usherhq/usher"
)

// contract is the config that must work as written.
const contract = `listen: 127.0.0.1:8080
admin:
  listen: 127.0.0.1:9090
  token: change-me
store:
  embedded:
    path: ./usher-data
rooms:
  - id: sale
    name: Seal Brewing spring sale
    origin: http://127.0.0.1:3000
    routes:
      - path: /
    total_active_users: 200
    new_users_per_minute: 300
    session_duration: 5m
    queueing_method: fifo
    refresh_interval: 20s
    json_response_enabled: true
`

// MustParse parses a config or fails the test.
func MustParse(tb testing.TB, text string) *Config {
	tb.Helper()
	c, err := Parse(strings.NewReader(text))
	if err != nil {
		tb.Fatalf("Parse: %v", err)
	}
	return c
}

func TestParseContract(t *testing.T) {
	c := MustParse(t, contract)
	if c.Listen != "127.0.0.1:8080" || c.Origin != "" || c.Store.Embedded.Path != "./usher-data" {
		t.Errorf("top level = %q, %q, %q", c.Listen, c.Origin, c.Store.Embedded.Path)
	}
	if c.Admin.Listen != "127.0.0.1:9090" || c.Admin.BearerToken() != "change-me" {
		t.Errorf("admin = %+v", c.Admin)
	}
	want := usher.Room{
		ID:     "sale",
		Name:   "Seal Brewing spring sale",
		Origin: "http://127.0.0.1:3000",
		Routes: []usher.Route{{Path: "/"}},
		Settings: usher.Settings{
			TotalActiveUsers:        200,
			NewUsersPerMinute:       300,
			SessionDuration:         5 * time.Minute,
			QueueingMethod:          usher.FIFO,
			QueueingStatusCode:      200,
			JSONResponseEnabled:     true,
			CookieAttributes:        usher.CookieAttributes{SameSite: "lax", Secure: "auto"},
			DefaultTemplateLanguage: "en-US",
			RefreshInterval:         20 * time.Second,
			Shards:                  1,
		},
	}
	if len(c.Rooms) != 1 || !reflect.DeepEqual(c.Rooms[0], want) {
		t.Errorf("rooms = %+v\nwant [%+v]", c.Rooms, want)
	}
}

func TestDefault(t *testing.T) {
	c := Default()
	if c.Listen != "127.0.0.1:8080" || c.Store.Embedded.Path != "./usher-data" || c.Admin.Listen != "" {
		t.Errorf("Default() = %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
	if got := MustParse(t, ""); !reflect.DeepEqual(got, c) {
		t.Errorf("Parse(\"\") = %+v, want Default() %+v", got, c)
	}
}

func TestRoomDefaults(t *testing.T) {
	c := MustParse(t, "origin: http://o\nrooms:\n  - id: a\n    total_active_users: 1\n    new_users_per_minute: 1\n    routes: [{host: a.example.com}]\n")
	r := c.Rooms[0]
	if r.Name != "a" || r.Origin != "http://o" {
		t.Errorf("name, origin = %q, %q; want the id and the top-level origin", r.Name, r.Origin)
	}
	if want := []usher.Route{{Host: "a.example.com", Path: "/"}}; !reflect.DeepEqual(r.Routes, want) {
		t.Errorf("routes = %+v, want %+v", r.Routes, want)
	}
	want := DefaultSettings()
	want.TotalActiveUsers, want.NewUsersPerMinute = 1, 1
	if r.Settings != want {
		t.Errorf("settings = %+v, want %+v", r.Settings, want)
	}
}

func TestValidateWithoutLines(t *testing.T) {
	c := Default()
	c.Rooms = []usher.Room{{ID: "a", Origin: "http://o", Routes: []usher.Route{{Path: "/"}}, Settings: usher.Settings{
		TotalActiveUsers: -5, NewUsersPerMinute: 1, SessionDuration: time.Minute, RefreshInterval: time.Second,
	}}}
	err := c.Validate()
	var v *ValidationError
	if !errors.As(err, &v) {
		t.Fatalf("Validate() = %v, want a *ValidationError", err)
	}
	want := []Problem{{Path: "rooms[0].total_active_users", Room: "a", Message: "must be at least 1, got -5"}}
	if !reflect.DeepEqual(v.Problems, want) {
		t.Errorf("problems = %+v, want %+v", v.Problems, want)
	}
	if got := err.Error(); got != "rooms[0] (a): total_active_users: must be at least 1, got -5" {
		t.Errorf("Error() = %q", got)
	}
	if code := usher.ErrorCode(err); code != usher.EInvalid {
		t.Errorf("usher.ErrorCode = %q, want %q", code, usher.EInvalid)
	}
}

func TestValidateZeroValuesThatMeanDefaults(t *testing.T) {
	c := Default()
	c.Origin = "http://o"
	c.Rooms = []usher.Room{{ID: "a", Routes: []usher.Route{{}}, Settings: usher.Settings{
		TotalActiveUsers: 1, NewUsersPerMinute: 1, SessionDuration: time.Minute, RefreshInterval: time.Second,
	}}}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
}

func TestValidationErrorLines(t *testing.T) {
	_, err := Parse(strings.NewReader(strings.Replace(contract, "total_active_users: 200", "total_active_users: -5", 1)))
	if got, want := err.Error(), "line 14: rooms[0] (sale): total_active_users: must be at least 1, got -5"; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
}

func TestLoadReadsFiles(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "valid_files.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Admin.BearerToken(); got != "s3cret-token" {
		t.Errorf("BearerToken() = %q", got)
	}
	ring, err := c.KeyRing()
	if err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 32)
	for i := range secret {
		secret[i] = byte(i)
	}
	want := []usher.Key{{ID: "k2", Secret: secret}, {ID: "k1", Secret: secret}}
	if !reflect.DeepEqual(ring, want) {
		t.Errorf("KeyRing() = %v, want %v", ring, want)
	}
}

func TestParseDoesNotReadFiles(t *testing.T) {
	c := MustParse(t, "admin:\n  listen: :9090\n  token_file: nowhere\nkeys:\n  - id: k\n    secret_file: nowhere\n")
	if got := c.Admin.BearerToken(); got != "" {
		t.Errorf("BearerToken() = %q, want \"\"", got)
	}
	if _, err := c.KeyRing(); err == nil || !strings.Contains(err.Error(), "use Load") {
		t.Errorf("KeyRing() error = %v, want one saying to use Load", err)
	}
}

func TestLoadAbsoluteFile(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "k.key")
	if err := os.WriteFile(key, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "sub", "usher.yaml")
	if err := os.Mkdir(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("keys:\n  - id: k\n    secret_file: "+key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := c.KeyRing()
	if err != nil || len(ring) != 1 || !bytes.Equal(ring[0].Secret, bytes.Repeat([]byte{0xab}, 32)) {
		t.Errorf("KeyRing() = %v, %v", ring, err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "none.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load = %v, want a not-exist error", err)
	}
}

func TestParseReadError(t *testing.T) {
	boom := errors.New("boom")
	if _, err := Parse(iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Errorf("Parse = %v, want %v", err, boom)
	}
}

func TestTrustedProxyPrefixes(t *testing.T) {
	c := &Config{TrustedProxies: []string{"10.1.2.3/8", "192.168.1.1", "::ffff:10.0.0.1", "fd00::/8"}}
	got, err := c.TrustedProxyPrefixes()
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("192.168.1.1/32"),
		netip.MustParsePrefix("10.0.0.1/32"),
		netip.MustParsePrefix("fd00::/8"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("TrustedProxyPrefixes() = %v, want %v", got, want)
	}
	c.TrustedProxies = append(c.TrustedProxies, "proxy")
	if _, err := c.TrustedProxyPrefixes(); err == nil || !strings.Contains(err.Error(), "trusted_proxies[4]") {
		t.Errorf("TrustedProxyPrefixes() error = %v, want one naming trusted_proxies[4]", err)
	}
}

func TestExplainWriteError(t *testing.T) {
	boom := errors.New("boom")
	if err := MustParse(t, contract).Explain(errWriter{boom}); !errors.Is(err, boom) {
		t.Errorf("Explain = %v, want %v", err, boom)
	}
}

type errWriter struct{ err error }

func (w errWriter) Write([]byte) (int, error) { return 0, w.err }

// TestFuzzFindingsConfig holds what fuzzing found in Parse, each fixed:
// aliases that made a small file cost seconds and gigabytes, problem lists
// without end, and values that broke a problem over several lines.
func TestFuzzFindingsConfig(t *testing.T) {
	t.Run("aliases", func(t *testing.T) {
		for _, doc := range []string{
			"origin: http://a\nrooms:\n  - id: r\n    total_active_users: 1\n    new_users_per_minute: 1\n    events: [&e {name: e, event_start_time: 2026-01-01T00:00:00Z, event_end_time: 2026-01-02T00:00:00Z}" + strings.Repeat(", *e", 3000) + "]\n",
			"origin: http://a\nrooms: [&r {id: a, total_active_users: 1, new_users_per_minute: 1}" + strings.Repeat(", *r", 3000) + "]\n",
			"a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nrooms: [*e]\n",
		} {
			start := time.Now()
			_, err := Parse(strings.NewReader(doc))
			if err == nil {
				t.Fatal("accepted")
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("%d bytes took %v", len(doc), d)
			}
			var v *ValidationError
			if !errors.As(err, &v) || len(v.Problems) > MaxProblems {
				t.Errorf("%d problems, want at most %d", len(v.Problems), MaxProblems)
			}
		}
	})
	t.Run("one line per problem", func(t *testing.T) {
		for _, doc := range []string{
			"admin: !t \"a\\nb\"\n",
			"origin: http://a\nrooms:\n  - id: r\n    name: \"a\\nRoom \\\"b\\\" covers everything\"\n    total_active_users: 1\n    new_users_per_minute: 1\n",
			"rooms:\n  - rules:\n      - !0000000000 >1\n       000\n        00\n",
		} {
			_, err := Parse(strings.NewReader(doc))
			var v *ValidationError
			if !errors.As(err, &v) {
				t.Fatalf("%q: accepted", doc)
			}
			for _, p := range v.Problems {
				if strings.ContainsAny(p.String(), "\r\n") {
					t.Errorf("%q: problem on several lines: %q", doc, p.String())
				}
			}
		}
	})
}

func TestMappedTrustedProxy(t *testing.T) {
	c := Default()
	c.TrustedProxies = []string{"::ffff:10.0.0.0/104"}
	ps, err := c.TrustedProxyPrefixes()
	if err != nil || len(ps) != 1 || ps[0].String() != "10.0.0.0/8" {
		t.Fatalf("TrustedProxyPrefixes = %v, %v; want 10.0.0.0/8", ps, err)
	}
}

func TestMaxRefreshInterval(t *testing.T) {
	c := MustParse(t, strings.Replace(contract, "refresh_interval: 20s", "refresh_interval: 20s\n    max_refresh_interval: 90s", 1))
	if got := c.Rooms[0].MaxRefreshInterval; got != 90*time.Second {
		t.Fatalf("max_refresh_interval = %v, want 90s", got)
	}
	if got := MustParse(t, contract).Rooms[0].MaxRefreshInterval; got != 0 {
		t.Fatalf("unset max_refresh_interval = %v, want 0 (the default)", got)
	}
	for _, tc := range []struct{ value, want string }{
		{"10s", "max_refresh_interval: must be at least refresh_interval (20s), got 10s"},
		{"6m", "max_refresh_interval: must be from 1s to 5m, got 6m"},
	} {
		_, err := Parse(strings.NewReader(strings.Replace(contract, "refresh_interval: 20s", "refresh_interval: 20s\n    max_refresh_interval: "+tc.value, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("max_refresh_interval %s: error %v, want it to say %q", tc.value, err, tc.want)
		}
	}
}
