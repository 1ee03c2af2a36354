package gate

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

func TestCookieAttributes(t *testing.T) {
	tests := []struct {
		name       string
		attrs      usher.CookieAttributes
		remote     string
		tls        bool
		xfp        string
		wantSecure bool
		wantSame   http.SameSite
	}{
		{name: "auto over http", wantSame: http.SameSiteLaxMode},
		{name: "auto over tls", tls: true, wantSecure: true, wantSame: http.SameSiteLaxMode},
		{name: "auto with trusted proto", remote: "10.0.0.9:1", xfp: "https", wantSecure: true, wantSame: http.SameSiteLaxMode},
		{name: "auto with untrusted proto", xfp: "https", wantSame: http.SameSiteLaxMode},
		{name: "always", attrs: usher.CookieAttributes{Secure: "always"}, wantSecure: true, wantSame: http.SameSiteLaxMode},
		{name: "never over tls", attrs: usher.CookieAttributes{Secure: "never"}, tls: true, wantSame: http.SameSiteLaxMode},
		{name: "strict", attrs: usher.CookieAttributes{SameSite: "strict"}, wantSame: http.SameSiteStrictMode},
		{name: "none", attrs: usher.CookieAttributes{SameSite: "none", Secure: "always"}, wantSecure: true, wantSame: http.SameSiteNoneMode},
		{name: "samesite auto is lax", attrs: usher.CookieAttributes{SameSite: "auto"}, wantSame: http.SameSiteLaxMode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			room := testRoom("sale", "/sale", "http://origin.invalid")
			room.CookieSuffix = "s1"
			room.CookieAttributes = tt.attrs
			room.Routes = append(room.Routes, usher.Route{Path: "/sale/vip"})
			g, _ := newGate(t, Options{Rooms: []*usher.Room{room}, Trusted: trusted(),
				Decider: &fakeDecider{DecideFn: decide(waiting(3))}})
			r := httptest.NewRequest("GET", "/sale/x", nil)
			if tt.remote != "" {
				r.RemoteAddr = tt.remote
			}
			if tt.tls {
				r.TLS = &tls.ConnectionState{}
			}
			if tt.xfp != "" {
				r.Header.Set("X-Forwarded-Proto", tt.xfp)
			}
			w := serve(g, r)
			c := setCookie(w, "__usher_wr_s1")
			if c == nil {
				t.Fatalf("no cookie in %v", w.Header().Values("Set-Cookie"))
			}
			if c.Secure != tt.wantSecure || c.SameSite != tt.wantSame || !c.HttpOnly || c.Path != "/sale" ||
				c.MaxAge != int(CookieMaxAge/time.Second) || c.Domain != "" {
				t.Errorf("cookie = %s", w.Header().Get("Set-Cookie"))
			}
		})
	}
}

func TestCookiePath(t *testing.T) {
	room := testRoom("sale", "/sale", "")
	if got := cookiePath(room, "/SALE/x"); got != "/SALE" {
		t.Errorf("case-insensitive room on /SALE/x: %q", got)
	}
	if got := cookiePath(room, "/sale/x"); got != "/sale" {
		t.Errorf("on /sale/x: %q", got)
	}
	if got := cookiePath(room, "/%73ale"); got != "/sale" {
		t.Errorf("on /%%73ale: %q", got)
	}
	room.PathCaseSensitive = true
	if got := cookiePath(room, "/SALE/x"); got != "/sale" {
		t.Errorf("case-sensitive room: %q", got)
	}
	room.SessionDuration = 48 * time.Hour
	if c := ticketCookie(room, "/sale", "http", "v"); c.MaxAge != 48*3600 {
		t.Errorf("Max-Age = %d with a 48h session", c.MaxAge)
	}
}

func TestTicketFromCookie(t *testing.T) {
	room := testRoom("sale", "/sale", "http://origin.invalid")
	other := testRoom("other", "/other", "http://origin.invalid")
	good := usher.Ticket{VisitorID: [8]byte{9, 9}, State: usher.Waiting, ArrivedAt: testNow.Add(-time.Minute).UTC()}
	tests := []struct {
		name    string
		cookies []string
		want    bool
	}{
		{"none", nil, false},
		{"garbage", []string{"__usher_wr=%%%not-a-ticket"}, false},
		{"truncated", []string{"__usher_wr=" + mustSeal(t, good, room)[:10]}, false},
		{"another room's", []string{"__usher_wr=" + mustSeal(t, good, other)}, false},
		{"good", []string{"__usher_wr=" + mustSeal(t, good, room)}, true},
		{"bad then good", []string{"__usher_wr=junk", "__usher_wr=" + mustSeal(t, good, room)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dec := &fakeDecider{DecideFn: decide(waiting(5))}
			g, _ := newGate(t, Options{Rooms: []*usher.Room{room, other}, Decider: dec})
			r := httptest.NewRequest("GET", "/sale", nil)
			for _, c := range tt.cookies {
				r.Header.Add("Cookie", c)
			}
			w := serve(g, r)
			if w.Code != 200 {
				t.Fatalf("status %d: a bad cookie must make a new visitor, not an error", w.Code)
			}
			calls := dec.calls()
			if len(calls) != 1 {
				t.Fatalf("Decide called %d times", len(calls))
			}
			if got := calls[0]; (got != nil) != tt.want || (got != nil && got.VisitorID != good.VisitorID) {
				t.Errorf("ticket = %+v, want present=%v", got, tt.want)
			}
		})
	}
}

func TestStripCookie(t *testing.T) {
	tests := []struct {
		in, want []string
	}{
		{[]string{"__usher_wr=x"}, nil},
		{[]string{"a=1; __usher_wr=x; b=2"}, []string{"a=1; b=2"}},
		{[]string{"a=1;b=2"}, []string{"a=1;b=2"}},
		{[]string{"__usher_wr_sale=keep;__usher_wr=x"}, []string{"__usher_wr_sale=keep"}},
		{[]string{"__usher_wr_sale=keep;c=1"}, []string{"__usher_wr_sale=keep;c=1"}},
		{[]string{"x=\"a;b\"", " __usher_wr=1 ", "y=2"}, []string{"x=\"a;b\"", "y=2"}},
	}
	for _, tt := range tests {
		h := http.Header{"Cookie": tt.in}
		stripCookie(h, "__usher_wr")
		if got := h["Cookie"]; len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) {
			t.Errorf("stripCookie(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
