package server

import (
	"crypto/tls"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestClientInfo(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	tests := []struct {
		name       string
		remote     string
		tls        bool
		host       string
		xff        []string
		xfp, xfh   string
		wantIP     string
		wantScheme string
		wantHost   string
	}{
		{name: "direct", remote: "203.0.113.9:4000", host: "shop.example", wantIP: "203.0.113.9", wantScheme: "http", wantHost: "shop.example"},
		{name: "direct tls", remote: "203.0.113.9:4000", tls: true, host: "shop.example", wantIP: "203.0.113.9", wantScheme: "https", wantHost: "shop.example"},
		{name: "untrusted peer headers ignored", remote: "203.0.113.9:4000", host: "shop.example", xff: []string{"1.1.1.1"}, xfp: "https", xfh: "evil.example", wantIP: "203.0.113.9", wantScheme: "http", wantHost: "shop.example"},
		{name: "trusted peer", remote: "10.1.2.3:4000", host: "internal:8080", xff: []string{"198.51.100.7"}, xfp: "https", xfh: "shop.example", wantIP: "198.51.100.7", wantScheme: "https", wantHost: "shop.example"},
		{name: "spoofed left part skipped", remote: "10.1.2.3:4000", host: "h", xff: []string{"6.6.6.6, 198.51.100.7, 10.9.9.9"}, wantIP: "198.51.100.7", wantScheme: "http", wantHost: "h"},
		{name: "several header lines", remote: "10.1.2.3:4000", host: "h", xff: []string{"6.6.6.6", "198.51.100.7", "10.0.0.2"}, wantIP: "198.51.100.7", wantScheme: "http", wantHost: "h"},
		{name: "all trusted gives leftmost", remote: "10.1.2.3:4000", host: "h", xff: []string{"10.0.0.5, 10.0.0.6"}, wantIP: "10.0.0.5", wantScheme: "http", wantHost: "h"},
		{name: "garbage hop stops at last trusted", remote: "10.1.2.3:4000", host: "h", xff: []string{"1.2.3.4, junk, 10.0.0.6"}, wantIP: "10.0.0.6", wantScheme: "http", wantHost: "h"},
		{name: "hop with port", remote: "10.1.2.3:4000", host: "h", xff: []string{"198.51.100.7:5555"}, wantIP: "198.51.100.7", wantScheme: "http", wantHost: "h"},
		{name: "ipv6 trusted peer", remote: "[::1]:4000", host: "h", xff: []string{"2001:db8::1"}, wantIP: "2001:db8::1", wantScheme: "http", wantHost: "h"},
		{name: "mapped ipv4 peer", remote: "[::ffff:10.1.2.3]:4000", host: "h", xff: []string{"198.51.100.7"}, wantIP: "198.51.100.7", wantScheme: "http", wantHost: "h"},
		{name: "proto list takes nearest", remote: "10.1.2.3:4000", host: "h", xfp: "http, https", wantIP: "10.1.2.3", wantScheme: "https", wantHost: "h"},
		{name: "bad proto ignored", remote: "10.1.2.3:4000", tls: true, host: "h", xfp: "gopher", wantIP: "10.1.2.3", wantScheme: "https", wantHost: "h"},
		{name: "bad forwarded host ignored", remote: "10.1.2.3:4000", host: "h", xfh: "evil.example/path", wantIP: "10.1.2.3", wantScheme: "http", wantHost: "h"},
		{name: "forwarded host with port", remote: "10.1.2.3:4000", host: "h", xfh: "Shop.Example:8443", wantIP: "10.1.2.3", wantScheme: "http", wantHost: "Shop.Example:8443"},
		{name: "no remote address", remote: "", host: "h", xff: []string{"1.2.3.4"}, wantScheme: "http", wantHost: "h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.remote
			r.Host = tt.host
			if tt.tls {
				r.TLS = &tls.ConnectionState{}
			}
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if tt.xfp != "" {
				r.Header.Set("X-Forwarded-Proto", tt.xfp)
			}
			if tt.xfh != "" {
				r.Header.Set("X-Forwarded-Host", tt.xfh)
			}
			ip, scheme, host := ClientInfo(r, trusted)
			var want netip.Addr
			if tt.wantIP != "" {
				want = netip.MustParseAddr(tt.wantIP)
			}
			if ip != want || scheme != tt.wantScheme || host != tt.wantHost {
				t.Errorf("ClientInfo = %v %q %q, want %v %q %q", ip, scheme, host, want, tt.wantScheme, tt.wantHost)
			}
		})
	}
}

func TestIsTrustedZero(t *testing.T) {
	if IsTrusted(netip.Addr{}, []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}) {
		t.Error("zero address trusted")
	}
}
