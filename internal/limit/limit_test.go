package limit

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"
)

// testHasher is a Hasher under a fixed test secret.
var testHasher = NewHasher([]byte("usher limit test secret, 32 byte"))

// Key is the client-tier key of p under the test secret.
func Key(p netip.Prefix) uint64 { return testHasher.Key(TierClient, p) }

func TestKeyDistinguishesPrefixes(t *testing.T) {
	a := Key(netip.MustParsePrefix("10.0.0.0/8"))
	b := Key(netip.MustParsePrefix("10.0.0.0/16"))
	c := Key(netip.MustParsePrefix("10.1.2.3/8")) // masked: same as a
	if a == b || a != c {
		t.Errorf("keys: /8 %x, /16 %x, 10.1.2.3/8 %x", a, b, c)
	}
	if Key(netip.Prefix{}) != 0 {
		t.Error("the zero prefix has a key")
	}
	p := netip.MustParsePrefix("10.0.0.0/24")
	if testHasher.Key(TierNetwork, p) == Key(p) {
		t.Error("the two tiers share a key")
	}
	if NewHasher([]byte("another secret")).Key(TierClient, p) == Key(p) {
		t.Error("two secrets give the same key")
	}
}

// TestKeyIsHMAC: a key is HMAC-SHA256 of tier, bits and the masked
// address (crypto/hmac computes the reference), for short and long
// secrets.
func TestKeyIsHMAC(t *testing.T) {
	for _, secret := range [][]byte{[]byte("short"), make([]byte, 100)} {
		p := netip.MustParsePrefix("2001:db8:1:2::/64")
		m := hmac.New(sha256.New, secret)
		a := p.Addr().As16()
		m.Write(append([]byte{TierNetwork, 64}, a[:]...))
		if got, want := NewHasher(secret).Key(TierNetwork, p), binary.BigEndian.Uint64(m.Sum(nil)); got != want {
			t.Fatalf("%d-byte secret: key %#x, want %#x", len(secret), got, want)
		}
	}
}

// TestTakeAllTiers: a ticket over the network's limit is counted in
// neither tier, and one over the client's in neither either.
func TestTakeAllTiers(t *testing.T) {
	clients, nets := NewSketch(), NewSketch()
	now := float64(1_800_000_000)
	net := testHasher.Key(TierNetwork, netip.MustParsePrefix("192.0.2.0/24"))
	got := 0
	for i := range 10 {
		c := Key(netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), 32))
		for range 3 {
			if TakeAll(now, Tier{clients, c, 2}, Tier{nets, net, 8}) {
				got++
			}
		}
	}
	if got != 8 {
		t.Fatalf("ten clients of one /24, three asks each, limits 2 and 8: %d granted, want 8", got)
	}
	// The last two clients were refused for the network: their own
	// budget is whole.
	last := Key(netip.MustParsePrefix("192.0.2.9/32"))
	if !clients.Take(last, now, 2) || !clients.Take(last, now, 2) {
		t.Fatal("a client refused for its network's count spent its own budget")
	}
}

func TestTakeLimitsOneClient(t *testing.T) {
	s := NewSketch()
	key := Key(netip.MustParsePrefix("192.0.2.1/32"))
	now := float64(1_800_000_000)
	got := 0
	for range 100 {
		if s.Take(key, now, 20) {
			got++
		}
		now += 0.1 // 100 asks in 10 s
	}
	if got != 20 {
		t.Fatalf("granted %d of 100 asks within a minute, want 20", got)
	}
	// A ticket counts until the 10 s slice it was taken in is six slices
	// old: 65 s on they all still count, 70 s on none does.
	if s.Take(key, 1_800_000_000+65, 20) {
		t.Fatal("65 s on, a ticket was granted over the limit")
	}
	now = 1_800_000_000 + 70
	got = 0
	for range 100 {
		if s.Take(key, now, 20) {
			got++
		}
	}
	if got != 20 {
		t.Fatalf("70 s on: granted %d, want 20", got)
	}
	// Two minutes on, the client starts afresh.
	if !s.Take(key, 1_800_000_300, 20) {
		t.Fatal("a client is still limited minutes later")
	}
}

// TestTakeBurstAcrossMinutes: a client that asks every 50 ms from 4 s
// before a minute's end (its whole budget in the last 3 s) and on for two
// minutes gets at most the limit in any 60 s window, and the limit every
// 70 s at least. Counting by the minute (the previous minute weighed by
// what is left of it in the window) it got 116 of 60 in one window here.
func TestTakeBurstAcrossMinutes(t *testing.T) {
	s := NewSketch()
	key := Key(netip.MustParsePrefix("192.0.2.9/32"))
	const limit = 60
	var granted []float64
	for now := float64(1_800_000_000 + 56); now < 1_800_000_000+180; now += 0.05 {
		if s.Take(key, now, limit) {
			granted = append(granted, now)
		}
	}
	most, lo := 0, 0
	for hi := range granted {
		for granted[hi]-granted[lo] >= 60 {
			lo++
		}
		most = max(most, hi-lo+1)
	}
	if most > limit {
		t.Fatalf("%d tickets in one 60 s window at a limit of %d", most, limit)
	}
	if most < limit || len(granted) < 2*limit {
		t.Fatalf("only %d tickets in the busiest 60 s window, %d in 121 s, at a limit of %d", most, len(granted), limit)
	}
	t.Logf("the busiest 60 s window held %d tickets at a limit of %d", most, limit)
}

// TestTakeHonestClientsAmongMany: with 50,000 other clients in the minute,
// each taking one ticket, a client taking one ticket is nearly never
// refused (the sketch over-counts, never under-counts).
func TestTakeHonestClientsAmongMany(t *testing.T) {
	s := NewSketch()
	rng := rand.New(rand.NewPCG(5, 6))
	now := float64(1_800_000_000)
	refused := 0
	for range 50000 {
		var a [4]byte
		v := rng.Uint32()
		a[0], a[1], a[2], a[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
		if !s.Take(Key(netip.PrefixFrom(netip.AddrFrom4(a), 32)), now, 3) {
			refused++
		}
		now += 0.001
	}
	if refused > 5 {
		t.Fatalf("%d of 50,000 one-ticket clients refused at a limit of 3", refused)
	}
}

// oldKey is a copy of the client key of earlier releases: splitmix64 of
// the prefix, no secret.
func oldKey(p netip.Prefix) uint64 {
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

// coverCells is the attack on a sketch whose keys anyone can compute: for
// each row, a random /64 of the attacker's whose cell in that row is the
// victim's. Spending each one's budget fills every cell of the victim, so
// its estimate (the least of its rows) is at the limit. It tries at most
// budget /64s and reports whether it covered every row.
func coverCells(rng *rand.Rand, key func(netip.Prefix) uint64, victim uint64, budget int) ([]netip.Prefix, bool) {
	want := Cells(victim)
	var found [Depth]netip.Prefix
	left := Depth
	for range budget {
		var a [16]byte
		a[0], a[1] = 0x20, 0x01
		for i := 2; i < 8; i++ {
			a[i] = byte(rng.Uint32())
		}
		p := netip.PrefixFrom(netip.AddrFrom16(a), 64)
		for d, c := range Cells(key(p)) {
			if c == want[d] && !found[d].IsValid() {
				found[d] = p
				left--
			}
		}
		if left == 0 {
			return found[:], true
		}
	}
	return nil, false
}

// TestSketchCollisionAttack is attack 4: a client that computes the keys
// finds offline, in a few hundred thousand tries, one /64 per row that
// shares the victim's cell, and 4 × 5 requests lock the victim out at a
// limit of 5 (shown against a copy of the old public key, as a check that
// the search works). Keyed, the same search run with the attacker's own
// secret finds /64s whose requests leave the victim's budget whole.
func TestSketchCollisionAttack(t *testing.T) {
	const perMinute, budget = 5, 1 << 22
	victimPrefix := netip.MustParsePrefix("198.51.100.7/32")
	now := float64(1_800_000_000)
	attack := func(key func(netip.Prefix) uint64, search func(netip.Prefix) uint64) (found, locked bool) {
		rng := rand.New(rand.NewPCG(7, 8))
		cover, ok := coverCells(rng, search, key(victimPrefix), budget)
		if !ok {
			return false, false
		}
		s := NewSketch()
		for _, p := range cover {
			for range perMinute {
				s.Take(key(p), now, perMinute)
			}
		}
		return true, !s.Take(key(victimPrefix), now+1, perMinute)
	}
	if found, locked := attack(oldKey, oldKey); !found || !locked {
		t.Fatalf("against the old public key: covered %v, victim locked out %v: the search is broken", found, locked)
	}
	guess := NewHasher([]byte("the attacker's guess at a secret"))
	found, locked := attack(Key, func(p netip.Prefix) uint64 { return guess.Key(TierClient, p) })
	if !found {
		t.Fatal("the search found nothing even under its own secret")
	}
	if locked {
		t.Fatal("keyed: /64s searched without the secret locked the victim out")
	}
	// And the /64s found against the old key do no harm to the keyed one.
	if _, locked := attack(Key, oldKey); locked {
		t.Fatal("keyed: /64s found against the old key locked the victim out")
	}
}

func BenchmarkTake(b *testing.B) {
	s := NewSketch()
	now := float64(1_800_000_000)
	for i := range b.N {
		s.Take(uint64(i), now+float64(i)*1e-5, 20)
	}
}

func BenchmarkKey(b *testing.B) {
	p := netip.MustParsePrefix("2001:db8:1:2::/64")
	for b.Loop() {
		testHasher.Key(TierClient, p)
	}
}
