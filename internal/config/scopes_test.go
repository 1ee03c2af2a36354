package config

import (
	"testing"

	"github.com/usherhq/usher"
)

func TestCookieDomain(t *testing.T) {
	tests := []struct {
		name  string
		hosts []string
		want  string
	}{
		{"none", nil, ""},
		{"one host", []string{"shop.test"}, ""},
		{"one host twice", []string{"shop.test", "SHOP.test"}, ""},
		{"siblings", []string{"www.shop.test", "checkout.shop.test"}, "shop.test"},
		{"parent and child", []string{"shop.test", "www.shop.test"}, "shop.test"},
		{"deeper", []string{"a.b.shop.example.com", "c.b.shop.example.com", "shop.example.com"}, "shop.example.com"},
		{"case", []string{"WWW.Shop.Test", "checkout.shop.test"}, "shop.test"},
		{"one label in common", []string{"a.com", "b.com"}, ""},
		{"nothing in common", []string{"shop.example.com", "shop.example.net"}, ""},
		{"label suffix is not a domain suffix", []string{"ashop.test", "bshop.test"}, ""},
		{"a route on any host", []string{"www.shop.test", ""}, ""},
		{"an IP address", []string{"10.0.0.1", "10.0.0.2"}, ""},
		{"IP and name", []string{"www.shop.test", "192.0.2.1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CookieDomain(tt.hosts); got != tt.want {
				t.Errorf("CookieDomain(%q) = %q, want %q", tt.hosts, got, tt.want)
			}
		})
	}
}

func TestHostsMeetDomains(t *testing.T) {
	room := func(hosts ...string) *usher.Room {
		r := &usher.Room{}
		for _, h := range hosts {
			r.Routes = append(r.Routes, usher.Route{Host: h, Path: "/"})
		}
		return r
	}
	shop := room("www.shop.test", "checkout.shop.test")
	tests := []struct {
		name string
		a, b *usher.Room
		want bool
	}{
		{"host under the domain", shop, room("blog.shop.test"), true},
		{"the domain itself", room("shop.test"), shop, true},
		{"host elsewhere", shop, room("www.shop.example"), false},
		{"host above the domain", room("sale.shop.test", "vip.sale.shop.test"), room("shop.test"), false},
		{"nested domains", shop, room("sale.shop.test", "vip.sale.shop.test"), true},
		{"sibling domains", room("a.x.test", "b.x.test"), room("a.y.test", "b.y.test"), false},
		{"domain and any host", shop, room(""), true},
		{"no parent: hosts apart", room("a.com", "b.net"), room("c.com"), false},
		{"no parent: a host shared", room("a.com", "b.net"), room("b.net"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hostsMeet(tt.a, tt.b); got != tt.want {
				t.Errorf("hostsMeet = %v, want %v", got, tt.want)
			}
			if got := hostsMeet(tt.b, tt.a); got != tt.want {
				t.Errorf("hostsMeet reversed = %v, want %v", got, tt.want)
			}
		})
	}
}
