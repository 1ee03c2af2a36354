package notify

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// ForbiddenTarget says why a webhook may not connect to addr, or "".
// Refused: a link-local address (169.254.0.0/16, fe80::/10, where the
// cloud metadata services that hand out a machine's credentials answer),
// the shared address space 100.64.0.0/10 (RFC 6598; Alibaba Cloud's
// metadata service is 100.100.100.200), the other clouds' metadata and
// control addresses (Azure's wireserver 168.63.129.16, Oracle Cloud's
// 192.0.0.192, AWS's fd00:ec2::254, Google Cloud's fd20:ce::254), an
// unspecified, a broadcast or a multicast address; and any IPv6 address
// that carries one of those IPv4 addresses inside it (v4-mapped
// ::ffff:a.b.c.d, v4-translated ::ffff:0:a.b.c.d, v4-compatible
// ::a.b.c.d, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4 2002::/16,
// Teredo 2001::/32 (its server, and its client stored inverted), ISATAP
// ...:5efe:a.b.c.d), since a translator on the path turns it back into
// the IPv4 one. Nothing a webhook is for lives there; refusing them keeps
// a write token (or a DNS name that turns to one) from making the nodes
// probe their metadata service. Loopback and private addresses stay
// allowed: receivers beside usher live there.
func ForbiddenTarget(addr netip.Addr) string {
	a := addr.WithZone("").Unmap()
	if why := forbiddenAddr(a); why != "" {
		return why
	}
	for _, e := range embeddedV4(a) {
		if e.addr.As4()[0] == 0 {
			// 0.0.0.0/8 is no host to reach: a layout that reads it
			// is not the one in use.
			continue
		}
		if why := forbiddenAddr(e.addr); why != "" {
			return fmt.Sprintf("%s embedding %s, %s", e.form, e.addr, why)
		}
	}
	return ""
}

// ForbiddenName says why a webhook may not connect to a host of that
// name, or "": the names under which the clouds publish their metadata
// service (metadata.google.internal and the like). They resolve to
// addresses ForbiddenTarget refuses anyway; refusing the name says so
// before any lookup.
func ForbiddenName(host string) string {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	for _, n := range metadataNames {
		if h == n {
			return "a cloud metadata service's name"
		}
	}
	return ""
}

// metadataNames are the host names of cloud metadata services.
var metadataNames = []string{
	"metadata.google.internal", // Google Cloud
	"metadata.goog",            // Google Cloud
	"metadata",                 // Google Cloud's short name
	"instance-data",            // AWS
	"instance-data.ec2.internal",
	"metadata.azure.com",      // Azure
	"metadata.tencentyun.com", // Tencent Cloud
}

// forbiddenAddr says why a (not v4-mapped) address is refused, or "".
func forbiddenAddr(a netip.Addr) string {
	switch {
	case a.IsLinkLocalUnicast():
		return "a link-local address (where cloud metadata services answer)"
	case a.IsUnspecified():
		return "an unspecified address"
	case a.IsMulticast():
		return "a multicast address"
	case a == broadcast:
		return "the broadcast address"
	case sharedSpace.Contains(a):
		return "the shared address space 100.64.0.0/10 (carrier-grade NAT; Alibaba Cloud's metadata service)"
	}
	for _, m := range metadataAddrs {
		if a == m.addr {
			return m.what
		}
	}
	return ""
}

var (
	broadcast   = netip.AddrFrom4([4]byte{255, 255, 255, 255})
	sharedSpace = netip.MustParsePrefix("100.64.0.0/10")
	// metadataAddrs are the clouds' metadata and control addresses
	// outside link-local space.
	metadataAddrs = []struct {
		addr netip.Addr
		what string
	}{
		{netip.MustParseAddr("168.63.129.16"), "Azure's wireserver (the platform's control address)"},
		{netip.MustParseAddr("192.0.0.192"), "Oracle Cloud's metadata service"},
		{netip.MustParseAddr("fd00:ec2::254"), "AWS's metadata service (IPv6)"},
		{netip.MustParseAddr("fd20:ce::254"), "Google Cloud's metadata service (IPv6)"},
	}
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	nat64L    = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour = netip.MustParsePrefix("2002::/16")
	teredo    = netip.MustParsePrefix("2001::/32")
)

// embedded is an IPv4 address an IPv6 one carries, and how.
type embedded struct {
	form string
	addr netip.Addr
}

// embeddedV4 returns the IPv4 addresses an IPv6 address a carries in
// the forms a translator or a tunnel reads them from. A NAT64 local-use
// address is read in each of RFC 6052's layouts that fits its /48, since
// the prefix length a network uses is its own.
func embeddedV4(a netip.Addr) []embedded {
	if !a.Is6() {
		return nil
	}
	b := a.As16()
	v4 := func(x0, x1, x2, x3 byte) netip.Addr { return netip.AddrFrom4([4]byte{x0, x1, x2, x3}) }
	var out []embedded
	zero := func(from, to int) bool {
		for _, x := range b[from:to] {
			if x != 0 {
				return false
			}
		}
		return true
	}
	switch {
	case zero(0, 12) && b[12] != 0:
		// ::a.b.c.d; ::, ::1 and the like (first octet 0) are not IPv4.
		out = append(out, embedded{"a v4-compatible address", v4(b[12], b[13], b[14], b[15])})
	case zero(0, 8) && b[8] == 0xff && b[9] == 0xff && zero(10, 12):
		out = append(out, embedded{"a v4-translated address", v4(b[12], b[13], b[14], b[15])})
	case nat64.Contains(a):
		out = append(out, embedded{"a NAT64 address", v4(b[12], b[13], b[14], b[15])})
	case nat64L.Contains(a):
		out = append(out,
			embedded{"a NAT64 local-use address", v4(b[6], b[7], b[9], b[10])},    // /48
			embedded{"a NAT64 local-use address", v4(b[7], b[9], b[10], b[11])},   // /56
			embedded{"a NAT64 local-use address", v4(b[9], b[10], b[11], b[12])},  // /64
			embedded{"a NAT64 local-use address", v4(b[12], b[13], b[14], b[15])}) // /96
	case sixToFour.Contains(a):
		out = append(out, embedded{"a 6to4 address", v4(b[2], b[3], b[4], b[5])})
	case teredo.Contains(a):
		out = append(out,
			embedded{"a Teredo address (its server)", v4(b[4], b[5], b[6], b[7])},
			embedded{"a Teredo address (its client)", v4(^b[12], ^b[13], ^b[14], ^b[15])})
	}
	// ISATAP: an interface identifier of 0000:5efe or 0200:5efe (the
	// universal/local bit either way) followed by the IPv4 address.
	if (b[8]|0x02) == 0x02 && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe {
		out = append(out, embedded{"an ISATAP address", v4(b[12], b[13], b[14], b[15])})
	}
	return out
}

// guardedTransport returns a transport as http.DefaultTransport whose
// connections are refused, once the host name is resolved and before any
// packet is sent, to an address ForbiddenTarget names (each address
// tried, at each dial: a name that resolves anew, as in DNS rebinding,
// is checked anew), and to a name ForbiddenName names. Through a proxy
// (HTTPS_PROXY, HTTP_PROXY in the environment) the connection checked is
// the proxy's: the proxy reaches the webhook, and its own rules apply.
func guardedTransport() *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: refuseForbidden}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			if why := ForbiddenName(host); why != "" {
				return nil, &forbiddenError{host: host, why: why}
			}
		}
		return d.DialContext(ctx, network, addr)
	}
	return t
}

// refuseForbidden is a net.Dialer's Control: it refuses an address that
// ForbiddenTarget names.
func refuseForbidden(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook: dialing %s: %w", address, err)
	}
	if why := ForbiddenTarget(ap.Addr()); why != "" {
		return &forbiddenError{host: ap.Addr().String(), why: why}
	}
	return nil
}

// forbiddenError is a connection refused by refuseForbidden: a delivery
// that meets it is not tried again.
type forbiddenError struct {
	host string // the address, or the name
	why  string
}

func (e *forbiddenError) Error() string {
	return fmt.Sprintf("refused to connect to %s: %s", e.host, e.why)
}
