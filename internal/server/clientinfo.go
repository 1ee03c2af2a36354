package server

import (
	"net/http"
	"net/netip"
	"strings"
)

// PeerAddr returns the address of the direct peer of r (r.RemoteAddr without
// its port, IPv4-mapped IPv6 unmapped), or the zero Addr when RemoteAddr is
// not an IP address (a unix socket, a test request without one).
func PeerAddr(r *http.Request) netip.Addr {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap()
	}
	if a, err := netip.ParseAddr(r.RemoteAddr); err == nil {
		return a.Unmap()
	}
	return netip.Addr{}
}

// IsTrusted reports whether ip is in one of the trusted prefixes. The zero
// Addr is never trusted.
func IsTrusted(ip netip.Addr, trusted []netip.Prefix) bool {
	if !ip.IsValid() {
		return false
	}
	ip = ip.Unmap()
	for _, p := range trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// TrustedPeer reports whether r's direct peer is in trusted: only then are
// its headers about the visitor (X-Forwarded-*, a country header)
// believed.
func TrustedPeer(r *http.Request, trusted []netip.Prefix) bool {
	return IsTrusted(PeerAddr(r), trusted)
}

// ClientInfo returns the visitor's IP address, the scheme ("http" or
// "https") and the host (as sent, port included) of request r.
//
// X-Forwarded-For, X-Forwarded-Proto and X-Forwarded-Host are believed only
// when the direct peer is in trusted. X-Forwarded-For is then walked from
// right to left, skipping trusted hops: the first untrusted address is the
// client (the leftmost one when every hop is trusted; the last trusted hop
// when an entry does not parse, since what lies left of it is not
// believable). X-Forwarded-Proto and X-Forwarded-Host take the value
// nearest to us (the last of a list), and are ignored when malformed.
// Otherwise the peer address, r.TLS and r.Host are used.
func ClientInfo(r *http.Request, trusted []netip.Prefix) (ip netip.Addr, scheme string, host string) {
	ip = PeerAddr(r)
	scheme = "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host = r.Host
	if !IsTrusted(ip, trusted) {
		return ip, scheme, host
	}
	ip = forwardedFor(r.Header.Values("X-Forwarded-For"), ip, trusted)
	if v := lastValue(r.Header.Values("X-Forwarded-Proto")); v != "" {
		switch v = strings.ToLower(v); v {
		case "http", "https":
			scheme = v
		}
	}
	if v := lastValue(r.Header.Values("X-Forwarded-Host")); validHost(v) {
		host = v
	}
	return ip, scheme, host
}

// forwardedFor walks the X-Forwarded-For values right to left from the
// trusted peer.
func forwardedFor(values []string, peer netip.Addr, trusted []netip.Prefix) netip.Addr {
	ip := peer
	for i := len(values) - 1; i >= 0; i-- {
		hops := strings.Split(values[i], ",")
		for j := len(hops) - 1; j >= 0; j-- {
			a, ok := parseHop(hops[j])
			if !ok {
				return ip
			}
			ip = a
			if !IsTrusted(a, trusted) {
				return ip
			}
		}
	}
	return ip
}

// parseHop parses one X-Forwarded-For entry: an address, possibly with a
// port ("1.2.3.4:80", "[::1]:80").
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// lastValue returns the last comma-separated element of the header values,
// trimmed.
func lastValue(values []string) string {
	if len(values) == 0 {
		return ""
	}
	v := values[len(values)-1]
	if i := strings.LastIndexByte(v, ','); i >= 0 {
		v = v[i+1:]
	}
	return strings.TrimSpace(v)
}

// validHost reports whether h looks like a host[:port]: letters, digits and
// the punctuation of names and IP literals, nothing that could smuggle a
// path or a header.
func validHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '-' || c == '_' || c == ':' || c == '[' || c == ']':
		default:
			return false
		}
	}
	return true
}
