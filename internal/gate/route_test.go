package gate

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/usherhq/usher"
)

func routingGate(t *testing.T) *Gate {
	t.Helper()
	const o = "http://origin.invalid"
	shop := testRoom("shop-sale", "/sale", o)
	shop.Routes[0].Host = "Shop.Example"
	api := testRoom("api", "/Api", o)
	api.PathCaseSensitive = true
	root := testRoom("other-root", "/", o)
	root.Routes[0].Host = "other.example"
	multi := testRoom("multi", "/tickets/", o)
	multi.Routes = append(multi.Routes, usher.Route{Path: "/events/drop"})
	g, _ := newGate(t, Options{Rooms: []*usher.Room{
		testRoom("sale", "/sale", o),
		testRoom("vip", "/sale/vip", o),
		shop, api, root, multi,
	}, Trusted: trusted()})
	return g
}

func TestRouting(t *testing.T) {
	g := routingGate(t)
	tests := []struct {
		host, target, want string
	}{
		// the attack corpus against /sale
		{"a.example", "/sale", "sale"},
		{"a.example", "/sale/", "sale"},
		{"a.example", "/sale/item/1?x=1", "sale"},
		{"a.example", "/SALE", "sale"},
		{"a.example", "/Sale/", "sale"},
		{"a.example", "/x/../sale", "sale"},
		{"a.example", "/sale/x/../..", ""},
		{"a.example", "//sale", "sale"},
		{"a.example", "///sale//x", "sale"},
		{"a.example", "/%73ale", "sale"},
		{"a.example", "/%53%41%4c%45", "sale"},
		{"a.example", "/./sale", "sale"},
		{"a.example", "/sale%2fx", "sale"},
		{"a.example", "/x%2f..%2fsale", "sale"},
		{"a.example", "/sale/..%2f", "sale"}, // servers that keep %2F see /sale/..%2F
		{"a.example", "/sale%2f..", ""},      // /sale/.. is / once decoded, and no segment is "sale" otherwise
		{"a.example", "/%5csale", "sale"},
		{"a.example", "/x%5c..%5csale", "sale"},
		{"a.example", "/sale;jsessionid=1", "sale"},
		{"a.example", "/..;/sale", "sale"},
		{"a.example", "/x/..;/sale/y", "sale"},
		{"a.example", "/salex", ""},
		{"a.example", "/sales", ""},
		{"a.example", "/sale.html", ""},
		{"a.example", "/s/ale", ""},
		{"a.example", "/", ""},
		// longest path wins
		{"a.example", "/sale/vip", "vip"},
		{"a.example", "/SALE/VIP/x", "vip"},
		{"a.example", "/sale/vipx", "sale"},
		// host-specific beats any-host at equal length; host case, port, dot
		{"shop.example", "/sale", "shop-sale"},
		{"SHOP.EXAMPLE:8443", "/sale/x", "shop-sale"},
		{"shop.example.", "/sale", "shop-sale"},
		{"shop.example", "/sale/vip", "vip"},
		{"other.example", "/anything", "other-root"},
		{"other.example", "/sale", "sale"},
		{"other.example:80", "/", "other-root"},
		// readings in two rooms: refused (see TestRoutingAmbiguous)
		// case-sensitive room
		{"a.example", "/Api/v1", "api"},
		{"a.example", "/api/v1", ""},
		{"a.example", "/API", ""},
		// several routes; a route with a trailing slash
		{"a.example", "/tickets", "multi"},
		{"a.example", "/events/drop/1", "multi"},
		{"a.example", "/events", ""},
	}
	for _, tt := range tests {
		t.Run(tt.host+tt.target, func(t *testing.T) {
			r := httptest.NewRequest("GET", tt.target, nil)
			r.Host = tt.host
			m, err := g.route(r)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if m.Room != nil {
				got = m.Room.ID
			}
			if got != tt.want {
				t.Errorf("room = %q, want %q (path %q)", got, tt.want, m.Path)
			}
		})
	}
}

func TestRoutingForwardedHost(t *testing.T) {
	g := routingGate(t)
	for _, tt := range []struct {
		remote, want string
	}{{"10.1.1.1:1", "shop-sale"}, {"203.0.113.1:1", "sale"}} {
		r := httptest.NewRequest("GET", "/sale", nil)
		r.Host = "internal"
		r.RemoteAddr = tt.remote
		r.Header.Set("X-Forwarded-Host", "shop.example")
		m, err := g.route(r)
		if err != nil || m.Room == nil || m.Room.ID != tt.want {
			t.Errorf("from %s: room %v, err %v; want %s", tt.remote, m.Room, err, tt.want)
		}
	}
}

func TestBadPath(t *testing.T) {
	g, _ := newGate(t, Options{Rooms: []*usher.Room{testRoom("sale", "/sale", "http://origin.invalid")}})
	for _, target := range []string{"/sale%00", "/sale%00/x"} {
		w := serve(g, httptest.NewRequest("GET", target, nil))
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", target, w.Code)
		}
	}
}

func TestNewErrors(t *testing.T) {
	const o = "http://origin.invalid"
	dupRoute := testRoom("b", "/SALE/", o)
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no decider", Options{Sealer: fakeSealer{}}, "no decider"},
		{"no sealer", Options{Decider: &fakeDecider{}}, "no sealer"},
		{"duplicate room", Options{Rooms: []*usher.Room{testRoom("a", "/a", o), testRoom("a", "/b", o)}}, "defined twice"},
		{"duplicate route", Options{Rooms: []*usher.Room{testRoom("a", "/sale", o), dupRoute}}, "also a route"},
		{"no id", Options{Rooms: []*usher.Room{testRoom("", "/a", o)}}, "no id"},
		{"bad origin", Options{Rooms: []*usher.Room{testRoom("a", "/a", "ftp://x")}}, "origin"},
		{"relative default", Options{DefaultOrigin: "/x"}, "default origin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			if opts.Decider == nil && tt.name != "no decider" {
				opts.Decider = &fakeDecider{}
			}
			if opts.Sealer == nil && tt.name != "no sealer" {
				opts.Sealer = fakeSealer{}
			}
			_, err := New(opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestRoutingAmbiguous: a path whose readings fall in two rooms (an
// encoded slash, a backslash or a ';' read either way) is refused, since
// no one room's decision covers what the origin may read: before, the
// most specific room decided, and /open/..%2fbeer was admitted by an open
// room under /open while an origin that decodes %2F served /beer, a page
// of a full room over / (found by TestE2EPathDifferential).
func TestRoutingAmbiguous(t *testing.T) {
	g := routingGate(t)
	for _, tt := range []struct{ host, target string }{
		{"other.example", "/sale/..%2f"},
		{"other.example", "/sale/..%2fx"},
		{"other.example", "/sale/..%5cx"},
		{"a.example", "/sale/vip/..%2fx"},
		{"a.example", "/sale/vip;x/..%2f"},
		{"other.example", "/x%2f..%2fsale"}, // /sale decoded; /x%2F..%2Fsale, the root room's, kept
		{"other.example", "/sale%2fx"},
	} {
		r := httptest.NewRequest("GET", tt.target, nil)
		r.Host = tt.host
		m, err := g.route(r)
		if err == nil {
			t.Errorf("%s%s: room %v, want refused", tt.host, tt.target, m.Room)
		}
	}
	// One room, or a room and none: decided by the room.
	for _, tt := range []struct{ host, target, want string }{
		{"a.example", "/sale/..%2f", "sale"},
		{"a.example", "/sale%2fvip", "vip"},
		{"a.example", "/x%2f..%2fsale", "sale"},
		{"other.example", "/sale/x;y", "sale"},
	} {
		r := httptest.NewRequest("GET", tt.target, nil)
		r.Host = tt.host
		m, err := g.route(r)
		if err != nil || m.Room == nil || m.Room.ID != tt.want {
			t.Errorf("%s%s: room %v, err %v; want %s", tt.host, tt.target, m.Room, err, tt.want)
		}
	}
}
