package ticket

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

func TestTimeRange(t *testing.T) {
	if got := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Unix(); got != minSec {
		t.Errorf("minSec = %d, want %d", minSec, got)
	}
	if got := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC).Unix() - 1; got != maxSec {
		t.Errorf("maxSec = %d, want %d", maxSec, got)
	}
}

// TestPayloadBound checks that a ticket with every field at the far end of
// its range encodes within maxPayloadLen.
func TestPayloadBound(t *testing.T) {
	lo, hi := time.UnixMilli(minTime).UTC(), time.UnixMilli(maxTime).UTC()
	for _, arrived := range []time.Time{lo, hi} {
		far := lo
		if arrived.Equal(lo) {
			farthest := hi
			far = farthest
		}
		tk := usher.Ticket{
			VisitorID: [8]byte{1}, State: usher.Admitted, ArrivedAt: arrived,
			AdmittedAt: far, CountedAt: far, NextCheckIn: far, DrewAt: far, Until: far, Announced: maxAnnounced,
			Cell: far.Unix(), Place: far.Unix(), Back: true, Joining: true, Binding: 0xffffffff, Position: maxPosition,
			Jitter: -maxJitter,
		}
		if err := checkTicket(&tk); err != nil {
			t.Fatalf("checkTicket: %v", err)
		}
		b := appendPayload(nil, &tk)
		if len(b) > maxPayloadLen {
			t.Errorf("arrived %v: payload of %d bytes, over maxPayloadLen %d", arrived, len(b), maxPayloadLen)
		}
		if _, err := decodePayload(b, formatVersion); err != nil {
			t.Errorf("arrived %v: %v", arrived, err)
		}
	}
}

func TestDecodePayloadVersion1(t *testing.T) {
	// A version 1 admitted ticket (flags in one byte, no Until) takes its
	// Cell as its session end; a version 2 flag is unknown there.
	b := append(make([]byte, 8), byte(usher.Admitted), flagAdmittedAt|flagCell)
	b = binary.AppendUvarint(b, uint64(minTime+5000))
	b = binary.AppendVarint(b, 1000) // admitted 1 s after arrival
	b = binary.AppendVarint(b, 300)  // cell 300 s after arrival's second
	b = binary.AppendVarint(b, 0)
	tk, err := decodePayload(b, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Unix(minSec+5+300, 0); !tk.Until.Equal(want) {
		t.Errorf("Until = %v, want the cell %v", tk.Until, want)
	}
	v2 := append(make([]byte, 8), byte(usher.Waiting))
	v2 = binary.AppendUvarint(v2, flagBack)
	v2 = binary.AppendUvarint(v2, uint64(minTime+5000))
	v2 = binary.AppendVarint(v2, 0)
	if _, err := decodePayload(v2, 1); err == nil {
		t.Error("version 1 accepted a version 2 flag")
	}
	if tk, err := decodePayload(v2, 2); err != nil || !tk.Back {
		t.Errorf("version 2: %+v, %v", tk, err)
	}
}

func TestDecodePayload(t *testing.T) {
	in := fullTicket()
	full := appendPayload(nil, &in)
	if len(full) > maxPayloadLen {
		t.Fatalf("payload of a full ticket is %d bytes, over maxPayloadLen %d", len(full), maxPayloadLen)
	}
	// build writes a payload field by field.
	build := func(state, flags byte, arrived uint64, rest ...int64) []byte {
		b := append(make([]byte, 8), state, flags)
		b = binary.AppendUvarint(b, arrived)
		for _, v := range rest {
			b = binary.AppendVarint(b, v)
		}
		return b
	}
	jitter := func(b []byte, ms int64) []byte { return binary.AppendVarint(b, ms) }
	const arrived = uint64(minTime + 1000)
	for _, tc := range []struct {
		name    string
		payload []byte
		ok      bool
	}{
		{"full", full, true},
		{"minimal", jitter(build(1, 0, arrived), 0), true},
		{"all version 1 flags", jitter(build(2, flagsKnownV1, arrived, -1000, 0, 1, 0, 30, 2000), 5), true},
		{"empty", nil, false},
		{"fixed fields only", full[:10], false},
		{"trailing byte", append(append([]byte(nil), full...), 0), false},
		{"too long", make([]byte, maxPayloadLen+1), false},
		{"state 0", jitter(build(0, 0, arrived), 0), false},
		{"state 3", jitter(build(3, 0, arrived), 0), false},
		{"unknown flag", jitter(build(1, 0x10, arrived), 0), false},
		{"arrival before 2020", jitter(build(1, 0, minTime-1), 0), false},
		{"arrival in 3000", jitter(build(1, 0, maxTime+1), 0), false},
		{"arrival overflowing int64", jitter(build(1, 0, 1<<63), 0), false},
		{"arrival a bad varint", append(build(1, 0, 0)[:10], 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), false},
		{"time before 2020", jitter(build(1, flagAdmittedAt, arrived, -1001), 0), false},
		{"time in 3000", jitter(build(1, flagCountedAt, arrived, maxTime), 0), false},
		{"time delta overflowing", jitter(build(1, flagNextCheckIn, arrived, 1<<63-1), 0), false},
		{"time delta underflowing", jitter(build(1, flagNextCheckIn, arrived, -1<<63), 0), false},
		{"cell before 2020", jitter(build(1, flagCell, arrived, -2), 0), false},
		{"cell overflowing", jitter(build(1, flagCell, arrived, 1<<63-1), 0), false},
		{"flagged time missing", jitter(build(1, flagAdmittedAt, arrived), 0), false},
		{"jitter over an hour", jitter(build(1, 0, arrived), int64(maxJitter/time.Millisecond)+1), false},
		{"jitter under minus an hour", jitter(build(1, 0, arrived), -int64(maxJitter/time.Millisecond)-1), false},
		{"negative jitter", jitter(build(1, 0, arrived), -150), true},
		{"jitter missing", build(1, 0, arrived), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodePayload(tc.payload, formatVersion)
			if tc.ok != (err == nil) {
				t.Fatalf("decodePayload(%x) error = %v, want ok %v", tc.payload, err, tc.ok)
			}
			if !tc.ok && got != (usher.Ticket{}) {
				t.Errorf("decodePayload returned a ticket with its error: %+v", got)
			}
		})
	}
	t.Run("every shorter prefix", func(t *testing.T) {
		for i := range len(full) {
			if _, err := decodePayload(full[:i], formatVersion); err == nil {
				t.Errorf("decodePayload accepted the first %d of %d bytes", i, len(full))
			}
		}
	})
}
