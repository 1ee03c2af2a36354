package gate

import (
	"net/http"
	"net/netip"
	"net/textproto"
	"strings"
	"testing"
)

// FuzzOutHeader: whatever headers a client sends (names as net/http
// canonicalizes them, any Connection header), the request to the origin
// carries no hop-by-hop header, no header the client's Connection names,
// no client copy of usher's own headers in any spelling, and exactly
// usher's admission token and forwarding headers.
func FuzzOutHeader(f *testing.F) {
	f.Add("X-Usher-Admission\nx_usher_admission\nX-Site_Pass\nCookie\nAccept", "keep-alive, X-Forwarded-For", "v")
	f.Add("Forwarded\nX_Forwarded_Host\nTe\nUpgrade", "Upgrade, x-site-pass", "trailers")
	f.Add("Keep-Alive\nX-Request-Id", "X-Request-Id, Cookie", "1")
	f.Fuzz(func(t *testing.T, names, connection, value string) {
		in := http.Header{}
		for _, n := range strings.Split(names, "\n") {
			if n == "" || strings.ContainsAny(n, " \t\r:") || !validName(n) {
				continue
			}
			in[textproto.CanonicalMIMEHeaderKey(n)] = []string{value}
		}
		if connection != "" {
			in["Connection"] = []string{connection}
		}
		g := &Gate{tokens: &Tokens{Header: "X-Site-Pass", folded: "x-site-pass"}}
		info := &proxyInfo{tokenHeader: "X-Site-Pass", token: "usher-token", scheme: "https", host: "shop.example",
			peer: netip.MustParseAddr("192.0.2.9")}
		out := g.outHeader(in, info)
		want := map[string]string{"X-Site-Pass": "usher-token", "X-Forwarded-For": "192.0.2.9",
			"X-Forwarded-Proto": "https", "X-Forwarded-Host": "shop.example"}
		for k, v := range want {
			if got := out[k]; len(got) != 1 || got[0] != v {
				t.Fatalf("%s = %q, want [%q] (in %v)", k, got, v, in)
			}
		}
		for k := range out {
			f := foldName(k)
			if _, ours := want[k]; ours {
				continue
			}
			switch {
			case isHop(k) && k != "Te":
				t.Errorf("hop-by-hop %s reached the origin", k)
			case k == "Te" && (len(out[k]) != 1 || out[k][0] != "trailers"):
				t.Errorf("Te = %q", out[k])
			case strings.HasPrefix(f, "x-usher-"), f == "x-site-pass", f == "forwarded",
				f == "x-forwarded-for", f == "x-forwarded-host", f == "x-forwarded-proto":
				t.Errorf("the client's %s reached the origin", k)
			case k != "X-Request-Id" && k != "User-Agent" && connectionListed(in["Connection"], k):
				t.Errorf("%s, named by Connection, reached the origin", k)
			}
		}
	})
}

// validName reports whether n is a header name net/http's server accepts
// (an RFC 9110 token).
func validName(n string) bool {
	for i := 0; i < len(n); i++ {
		c := n[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}
