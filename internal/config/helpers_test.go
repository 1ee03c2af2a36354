package config

import (
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

func TestCheckHostPort(t *testing.T) {
	tests := []struct {
		in, want string // want: a substring of the message, "" for valid
	}{
		{"127.0.0.1:8080", ""},
		{":8080", ""},
		{"localhost:0", ""},
		{"[::1]:443", ""},
		{"", "required"},
		{"127.0.0.1", "missing port"},
		{"::1", "must be host:port"},
		{"127.0.0.1:http", "port must be a number"},
		{"127.0.0.1:65536", "port must be a number"},
		{"127.0.0.1:+80", "port must be a number"},
		{"bad host!:80", "host must be an IP address or host name"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := checkHostPort(tt.in)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("checkHostPort(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSameListener(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"127.0.0.1:8080", "127.0.0.1:8080", true},
		{":8080", "127.0.0.1:8080", true},
		{"0.0.0.0:8080", "10.0.0.1:8080", true},
		{"[::]:8080", "[::1]:8080", true},
		{"LOCALHOST:80", "localhost:80", true},
		{"127.0.0.1:8080", "127.0.0.1:9090", false},
		{"127.0.0.1:8080", "10.0.0.1:8080", false},
		{":0", ":0", false},
		{"bad", "bad", false},
	}
	for _, tt := range tests {
		if got := sameListener(tt.a, tt.b); got != tt.want {
			t.Errorf("sameListener(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestCheckOrigin(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"http://127.0.0.1:3000", ""},
		{"https://shop.example.com/base/", ""},
		{"http://[::1]:3000", ""},
		{"127.0.0.1:3000", "absolute http or https URL"},
		{"localhost:3000", "absolute http or https URL"},
		{"ftp://x", "absolute http or https URL"},
		{"/path", "absolute http or https URL"},
		{"http:///path", "must name a host"},
		{"http://:80", "must name a host"},
		{"http://u:p@x", "user or password"},
		{"http://x/?a=1", "query or fragment"},
		{"http://x/?", "query or fragment"},
		{"http://x/#f", "query or fragment"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := checkOrigin(tt.in)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("checkOrigin(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCheckRoutePath(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", ""},
		{"/", ""},
		{"/sale", ""},
		{"/sale/", ""},
		{"/a.b/c", ""},
		{"sale", `start with "/"`},
		{"/a/../b", `".."`},
		{"/a..b", `".."`},
		{"//a", `"//"`},
		{"/a?b", `"?"`},
		{"/a#b", `"#"`},
		{"/a b", "spaces"},
		{"/a\tb", "control"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := checkRoutePath(tt.in)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("checkRoutePath(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCheckHost(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"shop.example.com", ""},
		{"Shop.Example.COM", ""},
		{"localhost", ""},
		{"xn--bcher-kva.example", ""},
		{"10.0.0.1", ""},
		{"::1", ""},
		{"https://shop.example.com", "scheme"},
		{"shop.example.com/sale", "path"},
		{"shop.example.com:443", "port"},
		{"[::1]:443", "port"},
		{"-bad.example.com", "host name like"},
		{"a..b", "host name like"},
		{"under_score.com", "host name like"},
		{"*.example.com", "host name like"},
		{strings.Repeat("a", 64) + ".com", "host name like"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := checkHost(tt.in)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("checkHost(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestDecodeSecret(t *testing.T) {
	tests := []struct {
		name, in, want string // want: error substring, "" for a 32-byte secret
	}{
		{"hex", strings.Repeat("0f", 32), ""},
		{"hex upper", strings.Repeat("AB", 32), ""},
		{"base64 std padded", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", ""},
		{"base64 std raw", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", ""},
		{"base64 url", "-_-_AwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", ""},
		{"base64 url raw", "-_-_AwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", ""},
		{"spaces around", "  AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n", ""},
		{"short", "YWJjZGVmZw==", "got 7"},
		{"short hex", strings.Repeat("0f", 16), "got 24"},
		{"long", strings.Repeat("A", 48), "got 36"},
		{"garbage", "not a secret!", "neither"},
		{"empty", "", "got 0"},
		{"inner newline", "AAECAwQFBgcICQoLDA0ODxAREhMU\nFRYXGBkaGxwdHh8=", "neither"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := decodeSecret(tt.in)
			switch {
			case tt.want == "" && (err != nil || len(b) != 32):
				t.Errorf("decodeSecret(%q) = %d bytes, %v; want 32 bytes", tt.in, len(b), err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("decodeSecret(%q) error = %v, want %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestPathsNest(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"/", "/sale", true},
		{"/sale", "/sale", true},
		{"/sale", "/sale/vip", true},
		{"/sale/vip", "/sale", true},
		{"/sale/", "/sale", true},
		{"/sale", "/salex", false},
		{"/sale", "/shop", false},
		{"/a/b", "/a/c", false},
	}
	for _, tt := range tests {
		if got := pathsNest(tt.a, tt.b); got != tt.want {
			t.Errorf("pathsNest(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestHostsMeet(t *testing.T) {
	room := func(hosts ...string) *usher.Room {
		r := &usher.Room{}
		for _, h := range hosts {
			r.Routes = append(r.Routes, usher.Route{Host: h, Path: "/"})
		}
		return r
	}
	tests := []struct {
		name string
		a, b *usher.Room
		want bool
	}{
		{"any and any", room(""), room(""), true},
		{"any and one", room(""), room("a.com"), true},
		{"same host", room("a.com"), room("A.com"), true},
		{"shared host", room("a.com", "b.com"), room("c.com", "b.com"), true},
		{"distinct hosts", room("a.com"), room("b.com"), false},
		{"one of several is any", room("a.com", ""), room("b.com"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hostsMeet(tt.a, tt.b); got != tt.want {
				t.Errorf("hostsMeet = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSameRoute(t *testing.T) {
	tests := []struct {
		a, b usher.Route
		fold bool
		want bool
	}{
		{usher.Route{Path: "/"}, usher.Route{Path: ""}, false, true},
		{usher.Route{Path: "/sale"}, usher.Route{Path: "/sale/"}, false, true},
		{usher.Route{Path: "/Sale"}, usher.Route{Path: "/sale"}, true, true},
		{usher.Route{Path: "/Sale"}, usher.Route{Path: "/sale"}, false, false},
		{usher.Route{Host: "A.com", Path: "/"}, usher.Route{Host: "a.com", Path: "/"}, false, true},
		{usher.Route{Host: "a.com", Path: "/"}, usher.Route{Path: "/"}, true, false},
	}
	for _, tt := range tests {
		if got := sameRoute(tt.a, tt.b, tt.fold); got != tt.want {
			t.Errorf("sameRoute(%+v, %+v, %v) = %v, want %v", tt.a, tt.b, tt.fold, got, tt.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{5 * time.Minute, "5m"},
		{20 * time.Second, "20s"},
		{90 * time.Second, "1m30s"},
		{time.Hour, "1h"},
		{time.Hour + time.Minute, "1h1m"},
		{500 * time.Millisecond, "500ms"},
		{0, "0s"},
	}
	for _, tt := range tests {
		if got := formatDuration(tt.in); got != tt.want {
			t.Errorf("formatDuration(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParentPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"rooms[0].routes[1].path", "rooms[0].routes[1]"},
		{"rooms[0].routes[1]", "rooms[0].routes"},
		{"rooms[0].routes", "rooms[0]"},
		{"rooms[0]", "rooms"},
		{"rooms", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := parentPath(tt.in); got != tt.want {
			t.Errorf("parentPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestProblemString(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{Path: "listen", Message: "missing port"}, "listen: missing port"},
		{Problem{Line: 3, Message: "unknown field \"x\""}, "line 3: unknown field \"x\""},
		{Problem{Line: 9, Path: "rooms[0]", Room: "sale", Message: "m"}, "line 9: rooms[0] (sale): m"},
		{Problem{Path: "rooms[1].routes[0].path", Room: "tickets", Message: "m"}, "rooms[1] (tickets): routes[0].path: m"},
		{Problem{Path: "rooms[12].id", Message: "required"}, "rooms[12]: id: required"},
		{Problem{Path: "keys[0].secret", Message: "m"}, "keys[0].secret: m"},
		{Problem{Path: "rooms[0].events[1].total_active_users", Room: "sale", Event: "drop", Message: "m"}, "rooms[0] (sale): events[1] (drop): total_active_users: m"},
		{Problem{Path: "rooms[0].events[1]", Room: "sale", Event: "drop", Message: "m"}, "rooms[0] (sale): events[1] (drop): m"},
		{Problem{Path: "rooms[0].events[1].name", Room: "sale", Message: "m"}, "rooms[0] (sale): events[1].name: m"},
		{Problem{Path: "rooms[2].rules[0].expression", Room: "sale", Rule: `a "b"`, Message: "m"}, `rooms[2] (sale): rules[0] ("a \"b\""): expression: m`},
		{Problem{Path: "rooms[2].routes[0]", Room: "sale", Rule: "x", Event: "y", Message: "m"}, "rooms[2] (sale): routes[0]: m"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.p, got, tt.want)
		}
	}
}

func TestRoutesText(t *testing.T) {
	tests := []struct {
		in   []usher.Route
		want string
	}{
		{[]usher.Route{{Path: "/"}}, "/ on any host"},
		{[]usher.Route{{Host: "a.com", Path: ""}}, "/ on a.com"},
		{[]usher.Route{{Path: "/a"}, {Path: "/b"}, {Path: "/c"}}, "/a, /b and /c on any host"},
		{[]usher.Route{{Host: "a.com", Path: "/x"}, {Path: "/y"}, {Host: "A.com", Path: "/z"}}, "/x and /z on a.com, and /y on any host"},
	}
	for _, tt := range tests {
		if got := routesText(tt.in); got != tt.want {
			t.Errorf("routesText(%+v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPlural(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "0 cats"}, {1, "1 cat"}, {2, "2 cats"}} {
		if got := plural(tt.n, "cat"); got != tt.want {
			t.Errorf("plural(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestPatterns(t *testing.T) {
	tests := []struct {
		name  string
		match func(string) bool
		ok    []string
		notOK []string
	}{
		{"room id", roomIDPattern.MatchString,
			[]string{"sale", "a", "0", "spring-sale_2", strings.Repeat("a", 63)},
			[]string{"", "Sale", "-sale", "_sale", "spring sale", strings.Repeat("a", 64)}},
		{"key id", keyIDPattern.MatchString,
			[]string{"k", "K1_-", strings.Repeat("k", 16)},
			[]string{"", "k.1", strings.Repeat("k", 17)}},
		{"cookie suffix", cookieSuffixPattern.MatchString,
			[]string{"a", "Sale_2", strings.Repeat("a", 32)},
			[]string{"", "a-b", strings.Repeat("a", 33)}},
		{"language", languagePattern.MatchString,
			[]string{"en", "en-US", "fr", "de", "zh-Hans-CN", "es-419", "EN-us"},
			[]string{"", "e", "en_US", "english", "en-", "-en", "en-US-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, s := range tt.ok {
				if !tt.match(s) {
					t.Errorf("%q does not match, want it to", s)
				}
			}
			for _, s := range tt.notOK {
				if tt.match(s) {
					t.Errorf("%q matches, want it not to", s)
				}
			}
		})
	}
}
