package notify

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// TestForbiddenTarget: the metadata address 169.254.169.254 is refused in
// every form an IPv6 address can carry it (the eleven forms of attack 10
// of issue 21, of which seven got through before), the clouds' other
// metadata and control addresses and the shared address space too, while
// loopback, private and public addresses, embedded or not, stay allowed.
func TestForbiddenTarget(t *testing.T) {
	for _, tc := range []struct {
		name, addr string
		want       string // a part of the reason; "" means allowed
	}{
		// Attack 10: 169.254.169.254 in eleven forms.
		{"plain", "169.254.169.254", "link-local"},
		{"v4-mapped", "::ffff:169.254.169.254", "link-local"},
		{"v4-compatible", "::169.254.169.254", "v4-compatible address embedding 169.254.169.254"},
		{"v4-translated", "::ffff:0:169.254.169.254", "v4-translated address embedding 169.254.169.254"},
		{"nat64", "64:ff9b::a9fe:a9fe", "NAT64 address embedding 169.254.169.254"},
		{"nat64 local /96", "64:ff9b:1::a9fe:a9fe", "NAT64 local-use address embedding 169.254.169.254"},
		{"nat64 local /48", "64:ff9b:1:a9fe:a9:fea9::", "NAT64 local-use address embedding 169.254.169.254"},
		{"6to4", "2002:a9fe:a9fe::1", "6to4 address embedding 169.254.169.254"},
		{"teredo server", "2001:0:a9fe:a9fe::1", "Teredo address (its server) embedding 169.254.169.254"},
		{"teredo client", "2001:0:4136:e378:8000:63bf:5601:5601", "Teredo address (its client) embedding 169.254.169.254"},
		{"link-local v6 (OpenStack)", "fe80::a9fe:a9fe", "link-local"},
		{"isatap", "2001:db8::5efe:a9fe:a9fe", "ISATAP address embedding 169.254.169.254"},
		// The clouds.
		{"aws v6", "fd00:ec2::254", "AWS's metadata service"},
		{"aws ecs task metadata", "169.254.170.2", "link-local"},
		{"gcp v6", "fd20:ce::254", "Google Cloud's metadata service"},
		{"azure wireserver", "168.63.129.16", "Azure's wireserver"},
		{"alibaba", "100.100.100.200", "shared address space"},
		{"shared space low", "100.64.0.1", "shared address space"},
		{"shared space high", "100.127.255.254", "shared address space"},
		{"oracle", "192.0.0.192", "Oracle Cloud's metadata service"},
		{"nat64 alibaba", "64:ff9b::6464:64c8", "NAT64 address embedding 100.100.100.200"},
		{"6to4 azure", "2002:a83f:8110::", "6to4 address embedding 168.63.129.16"},
		{"mapped oracle", "::ffff:192.0.0.192", "Oracle Cloud's metadata service"},
		// Others refused before.
		{"unspecified", "0.0.0.0", "unspecified"},
		{"unspecified v6", "::", "unspecified"},
		{"multicast", "224.0.0.1", "multicast"},
		{"multicast v6", "ff02::1", "multicast"},
		{"broadcast", "255.255.255.255", "broadcast"},
		{"zoned link-local", "fe80::1%eth0", "link-local"},
		// Allowed: receivers beside usher, and the Internet.
		{"loopback", "127.0.0.1", ""},
		{"loopback v6", "::1", ""},
		{"private", "10.1.2.3", ""},
		{"private 192.168", "192.168.1.10", ""},
		{"ula", "fd12:3456::1", ""},
		{"public", "203.0.113.7", ""},
		{"public v6", "2606:4700::1111", ""},
		{"nat64 public", "64:ff9b::808:808", ""},
		{"6to4 public", "2002:cb00:7107::1", ""},
		{"teredo public", "2001:0:cb00:7107:0:fbff:34ff:8ef8", ""},
		{"mapped private", "::ffff:10.0.0.1", ""},
		{"next to shared space", "100.128.0.1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ForbiddenTarget(netip.MustParseAddr(tc.addr))
			switch {
			case tc.want == "" && got != "":
				t.Errorf("ForbiddenTarget(%s) = %q, want allowed", tc.addr, got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("ForbiddenTarget(%s) = %q, want refused as %q", tc.addr, got, tc.want)
			}
		})
	}
}

// TestForbiddenName: the clouds' metadata names are refused whatever
// their case and trailing dot; others are left to the address check.
func TestForbiddenName(t *testing.T) {
	for _, h := range []string{"metadata.google.internal", "METADATA.google.internal.", "metadata", "instance-data.ec2.internal", "metadata.azure.com"} {
		if ForbiddenName(h) == "" {
			t.Errorf("ForbiddenName(%q) allowed", h)
		}
	}
	for _, h := range []string{"hooks.example", "metadata.example", "localhost", "google.internal"} {
		if why := ForbiddenName(h); why != "" {
			t.Errorf("ForbiddenName(%q) = %q, want allowed", h, why)
		}
	}
}

// TestGuardedTransportRefuses: the webhook transport refuses at connect
// time, before any packet leaves, an address that comes to it without
// config validation (as one a DNS name resolves to would), and a metadata
// name; the error is a forbiddenError, which the bus does not retry.
func TestGuardedTransportRefuses(t *testing.T) {
	c := &http.Client{Transport: guardedTransport()}
	for _, u := range []string{
		"http://[64:ff9b::a9fe:a9fe]:80/latest/meta-data/",
		"http://[2002:a9fe:a9fe::1]:80/",
		"http://[::169.254.169.254]:80/",
		"http://100.100.100.200:80/",
		"http://metadata.google.internal/computeMetadata/v1/",
	} {
		resp, err := c.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Errorf("GET %s: connected, want refused", u)
			continue
		}
		var fe *forbiddenError
		if !errors.As(err, &fe) {
			t.Errorf("GET %s: %v, want a forbiddenError", u, err)
		}
	}
}
