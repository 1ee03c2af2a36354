package ticket

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// FuzzOpen checks that Open never panics, fails with ErrInvalid, and opens
// nothing but what Seal wrote. The seeds are in testdata/fuzz/FuzzOpen; the
// one sealed ticket among them is the golden one. (A ticket sealed here
// would differ in every fuzzing process, each sealing with its own nonce.)
func FuzzOpen(f *testing.F) {
	r := MustRing(f, "k2", "k1")
	golden := readSeed(f, goldenFile)
	// The values this process sealed (below, to check a reseal) are real
	// tickets too: the fuzzer sees them go by and may send one back. So is
	// the seed "extended" without the character added to it.
	var sealed sync.Map
	ext := readSeed(f, filepath.Join("testdata", "fuzz", "FuzzOpen", "extended"))
	sealed.Store(ext[:len(ext)-1], true)
	f.Add(golden[:len(golden)-2] + "AA")
	f.Add("AQJrMQ")
	f.Fuzz(func(t *testing.T, value string) {
		tk, err := r.Open(value, testRoom, testCookie)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Open error %v does not wrap ErrInvalid", err)
			}
			if tk != (usher.Ticket{}) {
				t.Fatalf("Open returned a ticket with its error: %+v", tk)
			}
			return
		}
		if _, ours := sealed.Load(value); value != golden && !ours {
			t.Fatalf("Open accepted %q, which Seal did not write", value)
		}
		resealed := MustSeal(t, r, &tk)
		sealed.Store(resealed, true)
		again, err := r.Open(resealed, testRoom, testCookie)
		if err != nil {
			t.Fatalf("reseal: %v", err)
		}
		if d := diffTickets(again, tk); d != "" {
			t.Fatalf("reseal: %s", d)
		}
	})
}

// FuzzRoundTrip checks that Seal then Open returns the ticket to the
// millisecond, for any ticket Seal accepts. The fuzzer's numbers are folded
// into the range a ticket may hold; a zero bit in unset clears the field.
func FuzzRoundTrip(f *testing.F) {
	r := MustRing(f, "k1")
	full := fullTicket()
	f.Add(binary.BigEndian.Uint64(full.VisitorID[:]), true, full.ArrivedAt.UnixNano(), full.AdmittedAt.UnixNano(),
		full.CountedAt.UnixNano(), full.NextCheckIn.UnixNano(), full.Cell, int64(full.Jitter), uint8(0))
	f.Add(uint64(0), false, int64(0), int64(0), int64(0), int64(0), int64(0), int64(0), uint8(0xff))
	f.Add(uint64(1<<64-1), true, int64(-1), int64(1<<63-1), int64(-1<<63), int64(1), int64(-1), int64(-1), uint8(0x5a))
	f.Fuzz(func(t *testing.T, id uint64, admitted bool, arrived, admittedAt, counted, next, cell, jitter int64, unset uint8) {
		in := usher.Ticket{
			State:       usher.Waiting,
			ArrivedAt:   foldTime(arrived),
			AdmittedAt:  foldTime(admittedAt),
			CountedAt:   foldTime(counted),
			NextCheckIn: foldTime(next),
			Cell:        minSec + fold(cell, maxSec-minSec+1),
			Jitter:      time.Duration(fold(jitter, 2*int64(maxJitter)+1)) - maxJitter,
		}
		binary.BigEndian.PutUint64(in.VisitorID[:], id)
		if admitted {
			in.State = usher.Admitted
		}
		if unset&1 != 0 {
			in.AdmittedAt = time.Time{}
		}
		if unset&2 != 0 {
			in.CountedAt = time.Time{}
		}
		if unset&4 != 0 {
			in.NextCheckIn = time.Time{}
		}
		if unset&8 != 0 {
			in.Cell = 0
		}
		if unset&16 != 0 {
			in.Jitter = 0
		}
		if unset&32 == 0 {
			in.Announced = time.Duration(fold(next^counted, int64(maxAnnounced)+1))
		}
		v, err := r.Seal(&in, testRoom, testCookie)
		if err != nil {
			t.Fatalf("Seal(%+v): %v", in, err)
		}
		if len(v) >= 200 {
			t.Errorf("cookie value is %d bytes", len(v))
		}
		got, err := r.Open(v, testRoom, testCookie)
		if err != nil {
			t.Fatalf("Open(Seal(%+v)): %v", in, err)
		}
		if d := diffTickets(got, truncated(in)); d != "" {
			t.Fatalf("round trip of %+v: %s", in, d)
		}
	})
}

// fold maps x onto [0, n).
func fold(x, n int64) int64 { return (x%n + n) % n }

// foldTime maps nanoseconds onto the times a ticket may hold, sub-millisecond
// part included.
func foldTime(ns int64) time.Time {
	return time.UnixMilli(minTime + fold(ns/1e6, maxTime-minTime+1)).Add(time.Duration(fold(ns, 1e6)))
}
