package config

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/usherhq/usher"
)

func TestIPLists(t *testing.T) {
	c := MustParse(t, `ip_lists:
  office: [192.0.2.7, 198.51.100.9/24, "2001:db8::1", "::ffff:10.0.0.1"]
  empty: []
  none: null
`)
	want := map[string][]netip.Prefix{
		"office": {
			netip.MustParsePrefix("192.0.2.7/32"),
			netip.MustParsePrefix("198.51.100.0/24"),
			netip.MustParsePrefix("2001:db8::1/128"),
			netip.MustParsePrefix("10.0.0.1/32"),
		},
		"empty": {},
		"none":  {},
	}
	if got := c.IPLists(); !reflect.DeepEqual(got, want) {
		t.Errorf("IPLists() = %v, want %v", got, want)
	}
	if got := Default().IPLists(); got != nil {
		t.Errorf("Default().IPLists() = %v, want nil", got)
	}
	bad := &Config{IPListEntries: map[string][]string{"x": {"nope", "10.0.0.1"}}}
	if got := bad.IPLists()["x"]; len(got) != 1 || got[0] != netip.MustParsePrefix("10.0.0.1/32") {
		t.Errorf("IPLists() with a bad entry = %v, want the good one only", got)
	}
}

func TestValidHeaderName(t *testing.T) {
	for _, ok := range []string{"CF-IPCountry", "X-Country-Code", "x_geo", "a"} {
		if !validHeaderName(ok) {
			t.Errorf("validHeaderName(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", "CF IPCountry", "X-Country:", "X\nY", "Länd"} {
		if validHeaderName(bad) {
			t.Errorf("validHeaderName(%q) = true", bad)
		}
	}
}

func TestValidateRules(t *testing.T) {
	c := Default()
	c.IPListEntries = map[string][]string{"office": {"192.0.2.0/24"}}
	r := validRoom()
	r.Rules = []usher.Rule{
		{Description: "ok", Expression: `ip.in_ip_list("office")`, Action: "bypass_waiting_room", Enabled: true},
		{Description: `say "hi"`, Expression: `hots == "x"`, Action: "deny"},
		{Expression: `ip.in_ip_list("home")`},
		{Description: "rules[0] (\"ok\")", Expression: "path"},
	}
	c.Rooms = []usher.Room{r}
	var v *ValidationError
	if err := c.Validate(); !errors.As(err, &v) {
		t.Fatalf("Validate() = %v, want a *ValidationError", err)
	}
	var got []string
	for _, p := range v.Problems {
		got = append(got, p.String())
	}
	want := []string{
		`rooms[0] (sale): rules[1] ("say \"hi\""): action: must be bypass_waiting_room (the only action), got "deny"`,
		`rooms[0] (sale): rules[1] ("say \"hi\""): expression: 1:1: undeclared reference to 'hots' (did you mean 'host'?)`,
		`rooms[0] (sale): rules[2].expression: 1:15: in_ip_list: unknown IP list "home" (known: "office")`,
		`rooms[0] (sale): rules[3] ("rules[0] (\"ok\")"): expression: result is string, want bool`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if v.Problems[0].Rule != `say "hi"` || v.Problems[0].Path != "rooms[0].rules[1].action" {
		t.Errorf("problem 0 = %+v", v.Problems[0])
	}
}

func TestAddRuleErrorUnknownShape(t *testing.T) {
	var r report
	addRuleError(&r, []usher.Rule{{Description: "a"}}, roomLoc(0, "sale"), "rules: build environment: boom")
	if len(r) != 1 || r[0].String() != "rooms[0] (sale): rules: rules: build environment: boom" {
		t.Errorf("report = %+v", r)
	}
}
