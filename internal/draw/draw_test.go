package draw

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"slices"
	"strings"
	"testing"
)

// shuffled returns a revealed shuffle record of n entries, in the order
// the seed gives.
func shuffled(t *testing.T, room string, n int) Record {
	t.Helper()
	secret := [32]byte{1, 2, 3}
	const start, span = 1_800_000_000, 86400
	id := "shuffle-1800000000"
	seed := Seed(secret, "beacon round 42")
	type keyed struct {
		p Placed
		k [32]byte
	}
	var ks []keyed
	for i := range n {
		e := Entry(room, [8]byte{byte(i), byte(i >> 8), 7})
		ks = append(ks, keyed{Placed{Hex(e[:]), Place(seed, e, start, span)}, Key(seed, e)})
	}
	slices.SortFunc(ks, func(a, b keyed) int { return bytes.Compare(a.k[:], b.k[:]) })
	c := Commit(room, id, secret)
	r := Record{ID: id, Kind: KindShuffle, Commitment: Hex(c[:]), Revealed: true, Start: start, Span: span,
		Secret: Hex(secret[:]), Beacon: "beacon round 42", Seed: Hex(seed[:])}
	for i, k := range ks {
		if i > 0 && k.p.Place < ks[i-1].p.Place {
			t.Fatalf("places do not follow the keys: %d after %d", k.p.Place, ks[i-1].p.Place)
		}
		if k.p.Place >= start || k.p.Place < start-span {
			t.Fatalf("place %d outside [start-span, start)", k.p.Place)
		}
		r.Order = append(r.Order, k.p)
	}
	return r
}

// TestVerifyShuffle: the published order verifies; one entry moved, a
// place changed, another beacon or another secret are each reported.
func TestVerifyShuffle(t *testing.T) {
	r := shuffled(t, "shop", 200)
	if p := Verify("shop", r); len(p) != 0 {
		t.Fatalf("an honest shuffle: %v", p)
	}
	if p := Verify("other", r); len(p) == 0 {
		t.Fatal("the draw of another room verified")
	}
	moved := r
	moved.Order = slices.Clone(r.Order)
	e := moved.Order[150]
	moved.Order = slices.Delete(moved.Order, 150, 151)
	moved.Order = slices.Insert(moved.Order, 3, e) // one entry moved ahead, its place kept
	if p := Verify("shop", moved); len(p) == 0 || !strings.Contains(strings.Join(p, "\n"), "out of place") {
		t.Fatalf("one entry moved: %v", p)
	}
	replaced := r
	replaced.Order = slices.Clone(r.Order)
	replaced.Order[10].Place--
	if p := Verify("shop", replaced); len(p) == 0 {
		t.Fatal("a changed place verified")
	}
	beacon := r
	beacon.Beacon = "another round"
	if p := Verify("shop", beacon); len(p) == 0 {
		t.Fatal("another beacon verified")
	}
	secret := r
	secret.Secret = strings.Repeat("00", 32)
	if p := Verify("shop", secret); len(p) == 0 {
		t.Fatal("another secret verified")
	}
	twice := r
	twice.Order = append(slices.Clone(r.Order), r.Order[len(r.Order)-1])
	if p := Verify("shop", twice); len(p) == 0 {
		t.Fatal("an entry listed twice verified")
	}
}

// TestVerifyLottery: revealed links open the head, draws recompute; a
// draw moved to another window, or a link of another chain, is reported.
func TestVerifyLottery(t *testing.T) {
	secret := [32]byte{9}
	c := NewChain(secret)
	const epoch = 5
	w0 := int64(epoch*EpochWindows + 17)
	e := Entry("shop", [8]byte{1})
	h := c.Head()
	r := Record{ID: "lottery-2000-5", Kind: KindLottery, Commitment: Hex(h[:]), Revealed: true, Epoch: epoch}
	for w := w0; w < w0+3; w++ {
		l := c.Link(w)
		r.Windows = append(r.Windows, Revealed{Window: w, Link: Hex(l[:]), Admitted: []Drawn{{Hex(e[:]), Value(l, e)}}})
	}
	if p := Verify("shop", r); len(p) != 0 {
		t.Fatalf("an honest lottery: %v", p)
	}
	if r.Windows[0].Admitted[0].Draw == r.Windows[1].Admitted[0].Draw {
		t.Fatal("one entry drew alike in two windows")
	}
	moved := r
	moved.Windows = slices.Clone(r.Windows)
	moved.Windows[0].Admitted = r.Windows[1].Admitted
	if p := Verify("shop", moved); len(p) == 0 {
		t.Fatal("a draw moved to another window verified")
	}
	other := NewChain([32]byte{8})
	l := other.Link(w0)
	bad := r
	bad.Windows = []Revealed{{Window: w0, Link: Hex(l[:])}}
	if p := Verify("shop", bad); len(p) == 0 {
		t.Fatal("a link of another chain verified")
	}
	// A link reveals earlier windows' links, not later ones.
	if got := c.Link(w0 - 1); got != sha(c.Link(w0)) {
		t.Fatal("an earlier link is not the hash of the later")
	}
	r.Secret = Hex(secret[:])
	if p := Verify("shop", r); len(p) != 0 {
		t.Fatalf("with the secret revealed: %v", p)
	}
}

func sha(b [32]byte) [32]byte { return sha256.Sum256(b[:]) }

// TestKeyIsHMAC: the written-out HMAC is crypto/hmac's, and the entry
// built on the stack is the length-prefixed hash, for any seed, entry and
// room (a room id too long for the stack included).
func TestKeyIsHMAC(t *testing.T) {
	for i := range 200 {
		var seed [32]byte
		var entry [16]byte
		for j := range seed {
			seed[j] = byte(i*31 + j*7)
		}
		for j := range entry {
			entry[j] = byte(i*17 + j*3)
		}
		m := hmac.New(sha256.New, seed[:])
		m.Write(entry[:])
		if got := Key(seed, entry); !bytes.Equal(got[:], m.Sum(nil)) {
			t.Fatalf("Key(%x, %x) = %x, not HMAC-SHA256", seed, entry, got)
		}
		room := strings.Repeat("r", i)
		v := [8]byte{byte(i), 9}
		h := hash([]byte(labelEntry), []byte(room), v[:])
		if got := Entry(room, v); !bytes.Equal(got[:], h[:16]) {
			t.Fatalf("Entry of a room of %d bytes: %x, want %x", i, got, h[:16])
		}
	}
}
