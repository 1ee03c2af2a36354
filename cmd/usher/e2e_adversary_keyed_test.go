package main

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"testing"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/limit"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// The attacks of issue 21 on defences that hashed client data with public
// functions, or believed a header from anyone: each test plays the
// attacker against the real binary with what the attacker can compute
// offline, with copies of the old public functions.

// oldClientKey is a copy of the per-client limit's key of earlier
// releases: splitmix64 over the prefix, no secret.
func oldClientKey(p netip.Prefix) uint64 {
	mix := func(x uint64) uint64 {
		x += 0x9e3779b97f4a7c15
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
		x = (x ^ (x >> 27)) * 0x94d049bb133111eb
		return x ^ (x >> 31)
	}
	a := p.Masked().Addr().As16()
	h := uint64(p.Bits()) + 1
	for i := 0; i < 16; i += 8 {
		var w uint64
		for _, b := range a[i : i+8] {
			w = w<<8 | uint64(b)
		}
		h = mix(h ^ w)
	}
	return h
}

// coverVictim finds, with the old public key, one random IPv6 /64 per row
// of the sketch whose cell in that row is the victim's (a few hundred
// thousand hashes).
func coverVictim(t *testing.T, victim netip.Prefix) []netip.Prefix {
	t.Helper()
	rng := rand.New(rand.NewPCG(21, 4))
	want := limit.Cells(oldClientKey(victim))
	var found [limit.Depth]netip.Prefix
	left := limit.Depth
	for range 1 << 24 {
		var a [16]byte
		a[0], a[1] = 0x20, 0x01
		for i := 2; i < 8; i++ {
			a[i] = byte(rng.Uint32())
		}
		p := netip.PrefixFrom(netip.AddrFrom16(a), 64)
		for d, c := range limit.Cells(oldClientKey(p)) {
			if c == want[d] && !found[d].IsValid() {
				found[d], left = p, left-1
			}
		}
		if left == 0 {
			return found[:]
		}
	}
	t.Fatal("no /64 covers the victim's cells: the search is broken")
	return nil
}

// keyedLimitRoom is a room with free places and a per-client limit of 10
// new visitors a minute per IPv4 /24 or IPv6 /64, over it 429.
const keyedLimitRoom = `  - id: sale
    origin: ORIGIN
    routes:
      - path: /sale
    total_active_users: 1000
    new_users_per_minute: 6000
    session_duration: 1h
    json_response_enabled: true
    client_limit:
      new_visitors_per_minute: 10
      ipv4_prefix: 24
      over_limit: reject
`

// runSketchAttack is attack 4 on one node: the attacker spends, from one
// /64 per row found offline, each /64's budget of 10 (40 requests), then
// ten first-time visitors of the victim's /24 arrive. It returns how many
// of them were refused.
func runSketchAttack(t *testing.T, n *advNode) int {
	t.Helper()
	url := n.url("/sale/buy")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	victim := netip.MustParsePrefix("198.51.100.0/24")
	for i, p := range coverVictim(t, victim) {
		for j := range 10 {
			c := newAdvClient(fmt.Sprintf("bot%d-%d", i, j), rt)
			c.xff = p.Addr().Next().String()
			c.must(t, url)
		}
	}
	refused := 0
	for i := range 10 {
		c := newAdvClient(fmt.Sprintf("victim%d", i), rt)
		c.xff = fmt.Sprintf("198.51.100.%d", i+1)
		switch a := c.must(t, url); {
		case a.status == http.StatusTooManyRequests:
			refused++
		case !a.origin:
			t.Errorf("victim %d: %d %q", i, a.status, a.body)
		}
	}
	return refused
}

// TestE2EAdversaryKeyedSketch is attack 4 on the embedded store: with the
// old public key, 40 requests from four /64s found offline locked 10 of
// 10 first-time visitors of the victim's /24 out with 429. Keyed, none.
func TestE2EAdversaryKeyedSketch(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", advTrusted, keyedLimitRoom, "sale")
	refused := runSketchAttack(t, n)
	t.Logf("sketch collisions (embedded): %d of 10 first-time visitors of the victim /24 refused", refused)
	if refused != 0 {
		t.Errorf("%d of 10 first-time visitors of the victim /24 refused after 40 requests from /64s found offline", refused)
	}
}

// TestE2EAdversaryKeyedSketchRedis is attack 4 on a Redis store.
func TestE2EAdversaryKeyedSketchRedis(t *testing.T) {
	advSkip(t)
	t.Parallel()
	rd := redistest.StartServer(t)
	n := newAdvNode(t, advRedis(rd.Addr(), "closed"), advTrusted, keyedLimitRoom, "sale")
	refused := runSketchAttack(t, n)
	t.Logf("sketch collisions (Redis): %d of 10 first-time visitors of the victim /24 refused", refused)
	if refused != 0 {
		t.Errorf("%d of 10 first-time visitors of the victim /24 refused after 40 requests from /64s found offline", refused)
	}
}

// oldTicketBinding is a copy of the ticket binding of earlier releases: a
// 32-bit FNV-1a of the room, the client's /24 (or /48) and its user agent.
func oldTicketBinding(room, ua string, client netip.Addr) uint32 {
	h := fnv.New32a()
	h.Write([]byte(room))
	raw, _ := usher.ClientPrefix(client, 24, 48).MarshalBinary()
	h.Write([]byte{0, 'p'})
	h.Write(raw)
	h.Write([]byte{0, 'a'})
	h.Write([]byte(ua))
	return max(h.Sum32(), 1)
}

// forgeAgent finds a user agent that gives the attacker's network the
// target binding under the old function, by meeting in the middle: FNV-1a
// steps are undone by the prime's inverse. Bytes are printable and not
// spaces, so that the header arrives as sent.
func forgeAgent(t *testing.T, rng *rand.Rand, room, base string, attacker netip.Addr, target uint32) string {
	t.Helper()
	const prime, lo, span = 16777619, 0x21, 0x7f - 0x21
	start := oldTicketBinding(room, base, attacker)
	index := make(map[uint32][2]byte, span*span)
	for a := byte(lo); a < lo+span; a++ {
		for b := byte(lo); b < lo+span; b++ {
			index[((start^uint32(a))*prime^uint32(b))*prime] = [2]byte{a, b}
		}
	}
	inv := uint32(prime)
	for range 5 {
		inv *= 2 - prime*inv
	}
	for range 1 << 26 {
		var tail [4]byte
		s := target
		for i := 3; i >= 0; i-- {
			tail[i] = byte(lo + rng.IntN(span))
			s = s*inv ^ uint32(tail[i])
		}
		if head, ok := index[s]; ok {
			return base + string(head[:]) + string(tail[:])
		}
	}
	t.Fatal("no user agent found: the search is broken")
	return ""
}

// TestE2EAdversaryKeyedBinding is attack 5: an admitted cookie of a room
// whose tickets are bound to the client's /24 and user agent, copied to
// five other /24s, each with a user agent computed offline to give its
// network the cookie's binding under the old 32-bit FNV-1a. With it, 5 of
// 5 copies reached the origin of the full room; keyed, none.
func TestE2EAdversaryKeyedBinding(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", advTrusted, `  - id: sale
    origin: ORIGIN
    routes:
      - path: /sale
    total_active_users: 1
    new_users_per_minute: 600
    session_duration: 1h
    json_response_enabled: true
    ticket_binding:
      client_prefix: true
      user_agent: true
`, "sale")
	url := n.url("/sale/buy")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	owner := newAdvClient("owner", rt)
	owner.xff, owner.ua = "192.0.2.7", "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0"
	owner.mustAdmit(t, url, "first")
	cookie := owner.ticket()
	target := oldTicketBinding("sale", owner.ua, netip.MustParseAddr(owner.xff))
	rng := rand.New(rand.NewPCG(5, 21))
	reached := 0
	for i := range 5 {
		c := newAdvClient(fmt.Sprintf("copy%d", i), rt)
		c.xff = fmt.Sprintf("203.0.%d.9", 113+i)
		c.ua = forgeAgent(t, rng, "sale", owner.ua+" ", netip.MustParseAddr(c.xff), target)
		a, err := c.send(url, cookie)
		if err != nil {
			t.Fatal(err)
		}
		if a.origin {
			reached++
		}
	}
	t.Logf("forged bindings: %d of 5 copies of a bound cookie reached the origin from other /24s", reached)
	if reached != 0 {
		t.Errorf("%d of 5 copies with user agents forged offline reached the origin of a full room", reached)
	}
	owner.mustAdmit(t, url, "again, with its own cookie")
}

// TestE2EAdversaryCountryHeader is attack 6: a client (not a trusted
// proxy) sends the country header of a bypass rule to a full room. Before,
// 20 of 20 reached the origin; now none. From a trusted proxy the header
// still bypasses.
func TestE2EAdversaryCountryHeader(t *testing.T) {
	advSkip(t)
	t.Parallel()
	room := `  - id: sale
    origin: ORIGIN
    routes:
      - path: /sale
    total_active_users: 1
    new_users_per_minute: 600
    session_duration: 1h
    json_response_enabled: true
    rules:
      - description: local visitors
        expression: country == "NZ"
`
	for _, tc := range []struct {
		name, top string
		want      int
	}{
		{"untrusted client", "country_header: CF-IPCountry\n", 0},
		{"trusted proxy", "country_header: CF-IPCountry\n" + advTrusted, 20},
	} {
		n := newAdvNode(t, "", tc.top, room, "sale")
		url := n.url("/sale/buy")
		rt := advTransport()
		newAdvClient("filler", rt).mustAdmit(t, url, "first")
		reached := 0
		for i := range 20 {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			req.Header.Set("Accept", "application/json")
			req.Header.Set("CF-IPCountry", "NZ")
			req.Header.Set(advClientHeader, fmt.Sprintf("nz%d", i))
			resp, err := (&http.Client{Transport: rt}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.Header.Get(advOriginHeader) == "1" {
				reached++
			}
		}
		rt.CloseIdleConnections()
		t.Logf("country header from a %s: %d of 20 reached the origin of a full room", tc.name, reached)
		if reached != tc.want {
			t.Errorf("country header from a %s: %d of 20 reached the origin, want %d", tc.name, reached, tc.want)
		}
	}
}

// TestE2EAdversaryNetworkLimit is attack 9: 40 addresses of one IPv4 /24
// and 40 /64s of one IPv6 /48, each asking for 5 new places, against
// client_limit's defaults (5 a minute per /32 or /64). Before, each
// network took 200 places; now the network tier's default (4 × 5 per /24
// or /48) holds it to 20.
func TestE2EAdversaryNetworkLimit(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", advTrusted, `  - id: sale
    origin: ORIGIN
    routes:
      - path: /sale
    total_active_users: 10000
    new_users_per_minute: 6000
    session_duration: 1h
    json_response_enabled: true
    client_limit:
      new_visitors_per_minute: 5
      over_limit: reject
`, "sale")
	url := n.url("/sale/buy")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	for _, att := range []struct {
		name string
		addr func(int) string
	}{
		{"IPv4 /24", func(i int) string { return fmt.Sprintf("203.0.113.%d", i+1) }},
		{"IPv6 /48", func(i int) string { return fmt.Sprintf("2001:db8:7:%x::1", i+1) }},
	} {
		in := 0
		for i := range 40 {
			for j := range 5 {
				c := newAdvClient(fmt.Sprintf("bot%d-%d", i, j), rt)
				c.xff = att.addr(i)
				if c.must(t, url).origin {
					in++
				}
			}
		}
		t.Logf("network limit: 40 clients of one %s, 5 new visits each: %d places", att.name, in)
		if in != 20 {
			t.Errorf("%s: 40 clients took %d places, want the network's 20", att.name, in)
		}
	}
	other := newAdvClient("other", rt)
	other.xff = "198.51.100.7"
	other.mustAdmit(t, url, "from another network")
}

// TestE2EKeyedLimitTwoNodes: two nodes sharing a key ring and a Redis
// count a client in the same cells (their secret is derived from the
// ring), so a client alternating between them gets the limit once: 10 new
// visits of one /24, 5 a minute, give 5 places in all.
func TestE2EKeyedLimitTwoNodes(t *testing.T) {
	advSkip(t)
	t.Parallel()
	rd := redistest.StartServer(t)
	a := newAdvNode(t, advRedis(rd.Addr(), "closed"), advTrusted, advLimitRoom("sale", 100, "1h", "reject"), "sale")
	b := startAdvNode(t, a.key, a.origin, advRedis(rd.Addr(), "closed"), advTrusted, advLimitRoom("sale", 100, "1h", "reject"), "sale")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	in := 0
	for i := range 10 {
		n := a
		if i%2 == 1 {
			n = b
		}
		c := newAdvClient(fmt.Sprintf("bot%d", i), rt)
		c.xff = fmt.Sprintf("203.0.113.%d", i+1)
		if c.must(t, n.url("/sale/buy")).origin {
			in++
		}
	}
	t.Logf("two nodes, one ring: 10 new visits of one /24 alternating between them: %d places", in)
	if in != 5 {
		t.Errorf("10 new visits of one /24 over two nodes took %d places, want the limit of 5", in)
	}
}
