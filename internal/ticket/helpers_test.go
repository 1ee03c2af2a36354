package ticket

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

var update = flag.Bool("update", false, "rewrite the golden sealed ticket in testdata")

// The room and cookie name the tests seal for.
const (
	testRoom   = "sale"
	testCookie = "__usher_wr"
)

// goldenFile is a seed of FuzzOpen and the golden ticket of format
// version 1: fullTicket sealed by testKey("k1") for testRoom and testCookie.
var goldenFile = filepath.Join("testdata", "fuzz", "FuzzOpen", "sealed_v1")

// testKey returns a key with a fixed secret derived from id, so tickets
// sealed in one run open in the next.
func testKey(id string) usher.Key {
	seed := []byte("usher test key " + id + " ")
	return usher.Key{ID: id, Secret: bytes.Repeat(seed, SecretSize/len(seed)+1)[:SecretSize]}
}

// MustRing returns a ring of test keys with the ids, or fails tb.
func MustRing(tb testing.TB, ids ...string) *Ring {
	tb.Helper()
	keys := make([]usher.Key, 0, len(ids))
	for _, id := range ids {
		keys = append(keys, testKey(id))
	}
	r, err := NewRing(keys)
	if err != nil {
		tb.Fatalf("NewRing(%q): %v", ids, err)
	}
	return r
}

// MustSeal seals t with r for testRoom and testCookie, or fails tb.
func MustSeal(tb testing.TB, r *Ring, t *usher.Ticket) string {
	tb.Helper()
	v, err := r.Seal(t, testRoom, testCookie)
	if err != nil {
		tb.Fatalf("Seal: %v", err)
	}
	return v
}

// fullTicket has every field set, with sub-millisecond parts that the codec
// drops.
func fullTicket() usher.Ticket {
	arrived := time.Date(2026, 3, 14, 15, 9, 26, 535_897_932, time.UTC)
	return usher.Ticket{
		VisitorID:   [8]byte{0xde, 0xad, 0xbe, 0xef, 0x01, 0x23, 0x45, 0x67},
		State:       usher.Admitted,
		ArrivedAt:   arrived,
		AdmittedAt:  arrived.Add(17*time.Minute + 123456789),
		CountedAt:   arrived.Add(42*time.Minute + 987654321),
		Cell:        arrived.Add(62 * time.Minute).Unix(),
		NextCheckIn: arrived.Add(43 * time.Minute),
		Jitter:      1234567891, // 1.234567891s
		Place:       arrived.Add(-90 * time.Minute).Unix(),
		DrewAt:      arrived.Add(41*time.Minute + 555),
		Until:       arrived.Add(62 * time.Minute),
		Back:        true,
		Joining:     true,
		Binding:     0xfeedface,
		Position:    4242,
	}
}

// minimalTicket has only the fields a new waiter must have.
func minimalTicket() usher.Ticket {
	return usher.Ticket{
		VisitorID: [8]byte{1},
		State:     usher.Waiting,
		ArrivedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

// truncated returns t with its times and jitter cut to the millisecond, as
// Open returns it.
func truncated(t usher.Ticket) usher.Ticket {
	ms := func(x time.Time) time.Time {
		if x.IsZero() {
			return x
		}
		return time.UnixMilli(x.UnixMilli()).UTC()
	}
	t.ArrivedAt = ms(t.ArrivedAt)
	t.AdmittedAt = ms(t.AdmittedAt)
	t.CountedAt = ms(t.CountedAt)
	t.NextCheckIn = ms(t.NextCheckIn)
	t.DrewAt = ms(t.DrewAt)
	t.Announced = t.Announced.Truncate(time.Millisecond)
	t.Jitter = t.Jitter.Truncate(time.Millisecond)
	return t
}

// diffTickets describes how got differs from want, comparing times with
// Equal and zero times with IsZero; "" when they are the same.
func diffTickets(got, want usher.Ticket) string {
	var d []string
	if got.VisitorID != want.VisitorID {
		d = append(d, fmt.Sprintf("VisitorID %x, want %x", got.VisitorID, want.VisitorID))
	}
	if got.State != want.State {
		d = append(d, fmt.Sprintf("State %v, want %v", got.State, want.State))
	}
	for _, f := range []struct {
		name      string
		got, want time.Time
	}{
		{"ArrivedAt", got.ArrivedAt, want.ArrivedAt},
		{"AdmittedAt", got.AdmittedAt, want.AdmittedAt},
		{"CountedAt", got.CountedAt, want.CountedAt},
		{"NextCheckIn", got.NextCheckIn, want.NextCheckIn},
	} {
		if !f.got.Equal(f.want) || f.got.IsZero() != f.want.IsZero() {
			d = append(d, fmt.Sprintf("%s %v, want %v", f.name, f.got, f.want))
		}
	}
	if got.Cell != want.Cell {
		d = append(d, fmt.Sprintf("Cell %d, want %d", got.Cell, want.Cell))
	}
	if got.Place != want.Place {
		d = append(d, fmt.Sprintf("Place %d, want %d", got.Place, want.Place))
	}
	if !got.DrewAt.Equal(want.DrewAt) {
		d = append(d, fmt.Sprintf("DrewAt %v, want %v", got.DrewAt, want.DrewAt))
	}
	if got.Announced != want.Announced {
		d = append(d, fmt.Sprintf("Announced %v, want %v", got.Announced, want.Announced))
	}
	if got.Jitter != want.Jitter {
		d = append(d, fmt.Sprintf("Jitter %v, want %v", got.Jitter, want.Jitter))
	}
	return strings.Join(d, "; ")
}

// readSeed returns the string of a one-string seed file of the go fuzz
// corpus format.
func readSeed(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	body, ok := strings.CutPrefix(string(b), "go test fuzz v1\n")
	if !ok {
		tb.Fatalf("%s: not a go fuzz corpus file", path)
	}
	body, ok = strings.CutPrefix(strings.TrimSpace(body), "string(")
	if !ok || !strings.HasSuffix(body, ")") {
		tb.Fatalf("%s: not a single string", path)
	}
	s, err := strconv.Unquote(strings.TrimSuffix(body, ")"))
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return s
}

// writeSeed writes s as a one-string seed file of the go fuzz corpus format.
func writeSeed(tb testing.TB, path, s string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte("go test fuzz v1\nstring("+strconv.Quote(s)+")\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
}
