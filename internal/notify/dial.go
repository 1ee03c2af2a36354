package notify

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// ForbiddenTarget says why a webhook may not connect to addr, or "": a
// link-local address (169.254.0.0/16, fe80::/10, where the cloud metadata
// services that hand out a machine's credentials answer), AWS's IPv6
// metadata address, an unspecified or a multicast one. Nothing a webhook
// is for lives there; refusing them keeps a write token (or a DNS name
// that turns to one) from making the nodes probe their metadata service.
// Loopback and private addresses stay allowed: receivers beside usher
// live there.
func ForbiddenTarget(addr netip.Addr) string {
	a := addr.Unmap()
	switch {
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "a link-local address (where cloud metadata services answer)"
	case a == awsMetadataV6:
		return "the cloud metadata service's address"
	case a.IsUnspecified():
		return "an unspecified address"
	case a.IsMulticast():
		return "a multicast address"
	}
	return ""
}

var awsMetadataV6 = netip.MustParseAddr("fd00:ec2::254")

// guardedTransport returns a transport as http.DefaultTransport whose
// connections are refused, once the host name is resolved and before any
// packet is sent, to an address ForbiddenTarget names. Through a proxy
// (HTTPS_PROXY, HTTP_PROXY in the environment) the connection checked is
// the proxy's: the proxy reaches the webhook, and its own rules apply.
func guardedTransport() *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: refuseForbidden}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
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
		return &forbiddenError{addr: ap.Addr(), why: why}
	}
	return nil
}

// forbiddenError is a connection refused by refuseForbidden: a delivery
// that meets it is not tried again.
type forbiddenError struct {
	addr netip.Addr
	why  string
}

func (e *forbiddenError) Error() string {
	return fmt.Sprintf("refused to connect to %s: %s", e.addr, e.why)
}
