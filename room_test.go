package usher

import (
	"net/netip"
	"testing"
)

func TestClientPrefix(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		v4, v6 int
		want   string
	}{
		{"192.0.2.77", 0, 0, "192.0.2.77/32"},
		{"192.0.2.77", 24, 0, "192.0.2.0/24"},
		{"::ffff:192.0.2.77", 24, 48, "192.0.2.0/24"},
		{"2001:db8:1:2:3:4:5:6", 0, 0, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:3:4:5:6", 0, 48, "2001:db8:1::/48"},
		{"fe80::1%eth0", 0, 0, "fe80::/64"},
		{"192.0.2.77", 99, 0, "192.0.2.77/32"},
		{"2001:db8::1", 0, -5, "::/0"},
	} {
		got := ClientPrefix(netip.MustParseAddr(tc.addr), tc.v4, tc.v6)
		if got.String() != tc.want {
			t.Errorf("ClientPrefix(%s, %d, %d) = %v, want %s", tc.addr, tc.v4, tc.v6, got, tc.want)
		}
	}
	if ClientPrefix(netip.Addr{}, 24, 48).IsValid() {
		t.Error("the zero address has a prefix")
	}
}
