package ticket

import (
	"errors"
	"strings"
	"testing"
)

// TestOpenCache: a value opened once is remembered and opens to the same
// ticket; only for the room and cookie name it was sealed for; values that
// do not open are never remembered; the cache stays within its bound.
func TestOpenCache(t *testing.T) {
	r := MustRing(t, "k1")
	in := fullTicket()
	v := MustSeal(t, r, &in)
	first, err := r.Open(v, testRoom, testCookie)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.opened.len(); n != 1 {
		t.Fatalf("after one open: %d remembered, want 1", n)
	}
	again, err := r.Open(v, testRoom, testCookie)
	fresh, _ := r.open(v, testRoom, testCookie)
	if err != nil || again != first || again != fresh || again.VisitorID != in.VisitorID {
		t.Fatalf("second open: %+v, %v; want %+v", again, err, fresh)
	}
	// The same value for another room or cookie name does not open, cached
	// or not.
	if _, err := r.Open(v, "other", testCookie); !errors.Is(err, ErrInvalid) {
		t.Errorf("other room: %v, want ErrInvalid", err)
	}
	if _, err := r.Open(v, testRoom, "other"); !errors.Is(err, ErrInvalid) {
		t.Errorf("other cookie: %v, want ErrInvalid", err)
	}
	// Another ring (the keys changed) has its own cache: a ticket of a key
	// it lacks does not open there.
	if _, err := MustRing(t, "k2").Open(v, testRoom, testCookie); !errors.Is(err, ErrInvalid) {
		t.Errorf("ring without the key: %v, want ErrInvalid", err)
	}
	// Forged and tampered values are not remembered.
	tampered := []byte(v)
	tampered[len(tampered)-3] ^= 1
	for _, bad := range []string{string(tampered), strings.Repeat("A", len(v)), "x"} {
		if _, err := r.Open(bad, testRoom, testCookie); err == nil {
			t.Fatalf("%q opened", bad)
		}
	}
	if n := r.opened.len(); n != 1 {
		t.Errorf("after failed opens: %d remembered, want 1", n)
	}
	// Bounded: more distinct tickets than the bound keep it full, no more,
	// and each still opens to its own ticket.
	var last string
	for i := range openCacheSize + 50 {
		tk := fullTicket()
		tk.Position = int64(i)
		last = MustSeal(t, r, &tk)
		got, err := r.Open(last, testRoom, testCookie)
		if err != nil || got.Position != int64(i) {
			t.Fatalf("ticket %d: %+v, %v", i, got, err)
		}
	}
	if n := r.opened.len(); n != openCacheSize {
		t.Errorf("after %d tickets: %d remembered, want the bound %d", openCacheSize+50, n, openCacheSize)
	}
	if got, err := r.Open(v, testRoom, testCookie); err != nil || got != first {
		t.Errorf("first ticket, maybe evicted: %+v, %v", got, err)
	}
}
