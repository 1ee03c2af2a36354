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

func BenchmarkTake(b *testing.B) {
	s := NewSketch()
	now := float64(1_800_000_000)
	for i := range b.N {
		s.Take(uint64(i), now+float64(i)*1e-5, 20)
	}
}
