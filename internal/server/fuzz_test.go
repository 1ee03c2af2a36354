package server

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// FuzzClientInfo checks ClientInfo on any peer, Host, TLS state and
// X-Forwarded-For, -Proto and -Host (each line of xff, xfp and xfh a header
// line of its own), with trusted prefixes taken from trusted (a
// comma-separated list of addresses and CIDR prefixes) and from trust: bit
// 0 trusts the peer, bit i the i-th address of X-Forwarded-For counted from
// the right. It must not panic, and:
//
//   - the scheme is "http" or "https";
//   - when the peer is not trusted, the headers change nothing: the answer
//     is the peer, the scheme of the connection and r.Host;
//   - the IP is the peer or an address written in X-Forwarded-For;
//   - X-Forwarded-For gives the same IP written on one line or several;
//   - a client cannot move its IP by writing more X-Forwarded-For entries
//     to the left of what the trusted proxies appended;
//   - the scheme differs from the connection's only when a trusted peer
//     sent X-Forwarded-Proto ending in that scheme;
//   - the host is r.Host, or what a trusted peer sent as the last
//     X-Forwarded-Host, and then a host[:port] with nothing that could
//     smuggle a path, a query, a user or a header line.
//
// The seeds, in testdata/fuzz/FuzzClientInfo, are the cases of
// TestClientInfo and hostile ones: zones, ports, brackets, empty and
// garbage hops, CR LF, long lists and hosts, mapped addresses, a unix
// socket peer.
func FuzzClientInfo(f *testing.F) {
	f.Fuzz(func(t *testing.T, remote, host string, isTLS bool, xff, xfp, xfh, trustedList string, trust uint16) {
		r := fuzzRequest(remote, host, isTLS, xff, xfp, xfh)
		trusted := fuzzTrusted(r, trustedList, trust)
		ip, scheme, gotHost := ClientInfo(r, trusted)
		if ip2, scheme2, host2 := ClientInfo(r, trusted); ip2 != ip || scheme2 != scheme || host2 != gotHost {
			t.Fatalf("ClientInfo not deterministic: %v %q %q, then %v %q %q", ip, scheme, gotHost, ip2, scheme2, host2)
		}
		connScheme := "http"
		if isTLS {
			connScheme = "https"
		}
		if scheme != "http" && scheme != "https" {
			t.Fatalf("scheme %q", scheme)
		}

		bare := fuzzRequest(remote, host, isTLS, "", "", "")
		peer, _, _ := ClientInfo(bare, trusted)
		if peer != PeerAddr(r) {
			t.Fatalf("without X-Forwarded-*: IP %v, want the peer %v", peer, PeerAddr(r))
		}
		peerTrusted := trustedAddr(peer, trusted)
		if !peerTrusted && (ip != peer || scheme != connScheme || gotHost != host) {
			t.Fatalf("untrusted peer %v: ClientInfo = %v %q %q, want %v %q %q", peer, ip, scheme, gotHost, peer, connScheme, host)
		}

		// The IP.
		if ip != peer && !slices.Contains(forwardedHops(r), ip) {
			t.Fatalf("IP %v is neither the peer %v nor in X-Forwarded-For %q", ip, peer, r.Header.Values("X-Forwarded-For"))
		}
		if lines := r.Header.Values("X-Forwarded-For"); len(lines) > 1 {
			one := r.Clone(r.Context())
			one.Header.Set("X-Forwarded-For", strings.Join(lines, ","))
			if ip1, _, _ := ClientInfo(one, trusted); ip1 != ip {
				t.Fatalf("X-Forwarded-For %q gives %v on %d lines, %v on one", lines, ip, len(lines), ip1)
			}
		}
		if lines := r.Header.Values("X-Forwarded-For"); peerTrusted && len(lines) > 0 && !trustedAddr(ip, trusted) {
			spoofed := r.Clone(r.Context())
			spoofed.Header["X-Forwarded-For"] = append([]string{"203.0.113.66, 10.0.0.1"}, lines...)
			if ip1, _, _ := ClientInfo(spoofed, trusted); ip1 != ip {
				t.Fatalf("X-Forwarded-For %q gives client %v; with entries added on the left, %v", lines, ip, ip1)
			}
		}

		// The scheme.
		if scheme != connScheme {
			last := lastElement(r.Header.Values("X-Forwarded-Proto"))
			if !peerTrusted || !strings.EqualFold(last, scheme) {
				t.Fatalf("scheme %q on a %q connection; trusted peer %v, X-Forwarded-Proto %q", scheme, connScheme, peerTrusted, r.Header.Values("X-Forwarded-Proto"))
			}
		}

		// The host.
		if gotHost != host {
			if !peerTrusted || gotHost != lastElement(r.Header.Values("X-Forwarded-Host")) {
				t.Fatalf("host %q; Host %q, trusted peer %v, X-Forwarded-Host %q", gotHost, host, peerTrusted, r.Header.Values("X-Forwarded-Host"))
			}
			if !plainHost(gotHost) {
				t.Fatalf("host %q from X-Forwarded-Host is not a plain host[:port]", gotHost)
			}
		}
	})
}

// FuzzRequestID checks the RequestID middleware on any X-Request-Id (each
// line of sent a header line of its own) from a trusted peer or not: the
// id the handler sees in its context, in the request and in the response
// is one well-formed id; it is the one sent exactly when the peer is
// trusted and the first line sent is well-formed, else a new one. The
// seeds, in testdata/fuzz/FuzzRequestID, are the cases of TestRequestID and
// hostile ones.
func FuzzRequestID(f *testing.F) {
	f.Fuzz(func(t *testing.T, remote string, trustPeer bool, sent string) {
		var trusted []netip.Prefix
		if trustPeer {
			trusted = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
		}
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		lines := strings.Split(sent, "\n")
		if sent != "" {
			r.Header[RequestIDHeader] = lines
		}
		var seen, inRequest string
		calls := 0
		h := RequestID(trusted, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls++
			seen = RequestIDFrom(r.Context())
			inRequest = r.Header.Get(RequestIDHeader)
		}))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if calls != 1 {
			t.Fatalf("handler called %d times", calls)
		}
		if got := w.Header().Values(RequestIDHeader); len(got) != 1 || got[0] != seen || inRequest != seen {
			t.Fatalf("context %q, request %q, response %q: want one id", seen, inRequest, got)
		}
		if !plainID(seen) {
			t.Fatalf("id %q is not 1 to 128 of letters, digits and -_.:+=/", seen)
		}
		keep := trustPeer && sent != "" && trustedAddr(PeerAddr(r), trusted) && plainID(lines[0])
		if keep != (seen == lines[0]) {
			t.Fatalf("sent %q from %q (trusted %v): id %q", sent, remote, trustPeer, seen)
		}
		if !keep && len(seen) != 26 {
			t.Fatalf("new id %q has %d characters, want 26", seen, len(seen))
		}
	})
}

// fuzzRequest builds a request; each line of xff, xfp and xfh is a header
// line of its own, an empty string none.
func fuzzRequest(remote, host string, isTLS bool, xff, xfp, xfh string) *http.Request {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = remote
	r.Host = host
	if isTLS {
		r.TLS = &tls.ConnectionState{}
	}
	for name, v := range map[string]string{"X-Forwarded-For": xff, "X-Forwarded-Proto": xfp, "X-Forwarded-Host": xfh} {
		if v != "" {
			r.Header[name] = strings.Split(v, "\n")
		}
	}
	return r
}

// fuzzTrusted returns the trusted prefixes: those of list that parse
// (addresses as one-address prefixes), the peer's address when bit 0 of
// trust is set, and the i-th address of X-Forwarded-For from the right
// when bit i is set.
func fuzzTrusted(r *http.Request, list string, trust uint16) []netip.Prefix {
	var out []netip.Prefix
	for s := range strings.SplitSeq(list, ",") {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		} else if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	addrs := append([]netip.Addr{PeerAddr(r)}, reversed(forwardedHops(r))...)
	for i, a := range addrs {
		if i < 16 && trust&(1<<i) != 0 && a.IsValid() {
			out = append(out, netip.PrefixFrom(a.WithZone(""), a.BitLen()))
		}
	}
	return out
}

// forwardedHops returns every entry of X-Forwarded-For that is an address,
// with or without a port, unmapped, from left to right.
func forwardedHops(r *http.Request) []netip.Addr {
	var out []netip.Addr
	for _, line := range r.Header.Values("X-Forwarded-For") {
		for s := range strings.SplitSeq(line, ",") {
			s = strings.TrimSpace(s)
			if a, err := netip.ParseAddr(s); err == nil {
				out = append(out, a.Unmap())
			} else if ap, err := netip.ParseAddrPort(s); err == nil {
				out = append(out, ap.Addr().Unmap())
			}
		}
	}
	return out
}

func reversed(s []netip.Addr) []netip.Addr {
	s = slices.Clone(s)
	slices.Reverse(s)
	return s
}

// trustedAddr reports whether a is in one of the prefixes.
func trustedAddr(a netip.Addr, trusted []netip.Prefix) bool {
	return a.IsValid() && slices.ContainsFunc(trusted, func(p netip.Prefix) bool { return p.Contains(a.Unmap()) })
}

// lastElement returns the last comma-separated element of the last header
// line, trimmed.
func lastElement(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	elems := strings.Split(lines[len(lines)-1], ",")
	return strings.TrimSpace(elems[len(elems)-1])
}

// plainHost reports whether h is 1 to 255 of letters, digits and the
// punctuation of host names, ports and IP literals (".-_:[]").
func plainHost(h string) bool {
	return len(h) >= 1 && len(h) <= 255 &&
		!strings.ContainsFunc(h, func(c rune) bool {
			return !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:[]", c)
		})
}

// plainID reports whether id is 1 to 128 of letters, digits and "-_.:+=/".
func plainID(id string) bool {
	return len(id) >= 1 && len(id) <= 128 &&
		!strings.ContainsFunc(id, func(c rune) bool {
			return !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:+=/", c)
		})
}
