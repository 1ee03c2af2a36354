package gate

import (
	"cmp"
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"testing"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/ticket"
)

// oldBinding is a copy of the binding of earlier releases: a 32-bit FNV-1a
// of the room, the client's prefix and its user agent, with no secret.
func oldBinding(room *usher.Room, ua string, client netip.Addr) uint32 {
	b := &room.TicketBinding
	h := fnv.New32a()
	h.Write([]byte(room.ID))
	p := usher.ClientPrefix(client, cmp.Or(b.IPv4Prefix, 24), cmp.Or(b.IPv6Prefix, 48))
	raw, _ := p.MarshalBinary()
	h.Write([]byte{0, 'p'})
	h.Write(raw)
	h.Write([]byte{0, 'a'})
	h.Write([]byte(ua))
	return max(h.Sum32(), 1)
}

const (
	fnvPrime  = 16777619
	printable = 0x7f - 0x20 // the bytes a user agent may hold: 0x20 to 0x7e
)

// forgeUserAgent is the attack on a public 32-bit binding: a user agent
// that gives the attacker's network the victim's binding, found by meeting
// in the middle (FNV-1a's steps can be undone: multiply by the prime's
// inverse, XOR the byte). base's state after two more printable bytes is
// indexed forward; random four-byte tails are undone from the target
// backward until one lands in the index. It gives up after budget tails.
func forgeUserAgent(rng *rand.Rand, room *usher.Room, base string, attacker netip.Addr, target uint32, budget int) (string, bool) {
	// FNV-1a's state after base: its hash, since Sum32 is the state.
	start := oldBinding(room, base, attacker)
	if start == 1 {
		return "", false // max(…, 1) may have hidden a zero state: rare; give up
	}
	index := make(map[uint32][2]byte, printable*printable)
	for a := byte(0x20); a < 0x7f; a++ {
		for b := byte(0x20); b < 0x7f; b++ {
			s := ((start^uint32(a))*fnvPrime ^ uint32(b)) * fnvPrime
			index[s] = [2]byte{a, b}
		}
	}
	inv := uint32(fnvPrime) // the prime's inverse mod 2^32, by Newton's steps
	for range 5 {
		inv *= 2 - fnvPrime*inv
	}
	for range budget {
		var tail [4]byte
		s := target
		for i := 3; i >= 0; i-- {
			tail[i] = byte(0x20 + rng.IntN(printable))
			s = s*inv ^ uint32(tail[i])
		}
		if head, ok := index[s]; ok {
			return base + string(head[:]) + string(tail[:]), true
		}
	}
	return "", false
}

// TestBindingForgery is attack 5: a copied cookie of a bound ticket used
// from other networks. Against the old public 32-bit binding, a user agent
// that gives another /24 the victim's binding is found in well under a
// second, for every network tried (which shows the search works); against
// the keyed 64-bit binding, those user agents, and a hundred thousand
// random ones, bind nothing.
func TestBindingForgery(t *testing.T) {
	room := &usher.Room{ID: "shop", TicketBinding: usher.TicketBinding{ClientPrefix: true, UserAgent: true, IPv4Prefix: 24, IPv6Prefix: 48}}
	key, err := ticket.GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	ring, err := ticket.NewRing([]usher.Key{key})
	if err != nil {
		t.Fatal(err)
	}
	g := &Gate{sealer: ring}
	const victimUA = "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0"
	victim := netip.MustParseAddr("198.51.100.7")
	req := func(ua string) *http.Request {
		r, _ := http.NewRequest("GET", "http://shop.example/", nil)
		r.Header.Set("User-Agent", ua)
		return r
	}
	oldTarget := oldBinding(room, victimUA, victim)
	keyed := g.binding(bindingData(room, req(victimUA), victim))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5 {
		attacker := netip.AddrFrom4([4]byte{203, 0, byte(113 + i), 9})
		ua, ok := forgeUserAgent(rng, room, victimUA+" ", attacker, oldTarget, 1<<24)
		if !ok {
			t.Fatalf("network %v: no user agent found against the old binding (the search is broken)", attacker)
		}
		if got := oldBinding(room, ua, attacker); got != oldTarget {
			t.Fatalf("network %v: forged %q gives %#x, want %#x", attacker, ua, got, oldTarget)
		}
		if g.bound(keyed, bindingData(room, req(ua), attacker)) {
			t.Fatalf("network %v: the user agent forged against the old binding opens the keyed one", attacker)
		}
	}
	attacker := netip.MustParseAddr("203.0.113.9")
	for range 100_000 {
		var ua [24]byte
		for i := range ua {
			ua[i] = byte(0x20 + rng.IntN(printable))
		}
		if g.bound(keyed, bindingData(room, req(string(ua[:])), attacker)) {
			t.Fatalf("user agent %q from another network opens the keyed binding", ua)
		}
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], keyed)
	if keyed>>32 == 0 {
		t.Fatalf("keyed binding %x fits 32 bits", b)
	}
}

// BenchmarkBinding is the cost of checking a bound ticket's binding on a
// request: the old public FNV-1a, against the keyed HMAC (one key).
func BenchmarkBinding(b *testing.B) {
	room := &usher.Room{ID: "shop", TicketBinding: usher.TicketBinding{ClientPrefix: true, UserAgent: true, IPv4Prefix: 24, IPv6Prefix: 48}}
	key, _ := ticket.GenerateKey("k1")
	ring, _ := ticket.NewRing([]usher.Key{key})
	g := &Gate{sealer: ring}
	r, _ := http.NewRequest("GET", "http://shop.example/", nil)
	r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0")
	client := netip.MustParseAddr("198.51.100.7")
	b.Run("old", func(b *testing.B) {
		for b.Loop() {
			oldBinding(room, r.UserAgent(), client)
		}
	})
	bound := g.binding(bindingData(room, r, client))
	b.Run("keyed", func(b *testing.B) {
		for b.Loop() {
			if !g.bound(bound, bindingData(room, r, client)) {
				b.Fatal("not bound")
			}
		}
	})
}
