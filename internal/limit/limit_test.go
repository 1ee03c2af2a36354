package limit

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

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
	// A sliding minute: half a minute after the minute's end, half of the
	// earlier minute's tickets still count.
	now = 1_800_000_060 + 30
	got = 0
	for range 100 {
		if s.Take(key, now, 20) {
			got++
		}
	}
	if got != 10 {
		t.Fatalf("half a minute later: granted %d, want 10", got)
	}
	// Two minutes on, the client starts afresh.
	if !s.Take(key, 1_800_000_300, 20) {
		t.Fatal("a client is still limited minutes later")
	}
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

func BenchmarkTake(b *testing.B) {
	s := NewSketch()
	now := float64(1_800_000_000)
	for i := range b.N {
		s.Take(uint64(i), now+float64(i)*1e-5, 20)
	}
}
