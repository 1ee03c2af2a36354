package ticket

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/usherhq/usher"
)

// The plaintext of a sealed ticket (payload version 2, sealed under format
// version 2; version 1 still opens):
//
//	VisitorID   8 bytes
//	State       1 byte: usher.Waiting or usher.Admitted
//	flags       uvarint: which optional fields follow (bits below; one
//	            byte in version 1, where only the first six bits exist)
//	ArrivedAt   uvarint: unix milliseconds
//	AdmittedAt  varint: milliseconds from ArrivedAt   (if flagAdmittedAt)
//	CountedAt   varint: milliseconds from ArrivedAt   (if flagCountedAt)
//	NextCheckIn varint: milliseconds from ArrivedAt   (if flagNextCheckIn)
//	Cell        varint: seconds from ArrivedAt's unix second (if flagCell)
//	Place       varint: seconds from ArrivedAt's unix second (if flagPlace)
//	DrewAt      varint: milliseconds from ArrivedAt   (if flagDrewAt)
//	Until       varint: milliseconds from ArrivedAt   (if flagUntil)
//	Binding     8 bytes, big-endian                  (if flagBinding64)
//	            or 4 bytes, big-endian               (if flagBinding: the
//	            32-bit unkeyed binding of earlier releases, read only)
//	Position    uvarint                               (if flagPosition)
//	Announced   uvarint: milliseconds, above zero      (if flagAnnounced)
//	Jitter      varint: milliseconds, either way
//
// flagBack and flagJoining carry no field. A zero time.Time, a zero Cell or
// Binding and a false Back or Joining are left out and their flag cleared,
// so they come back zero.
// Nothing may follow Jitter. flagBinding64 is how the keyed 64-bit binding
// came in: a release that does not know it refuses the ticket (a new
// visitor, never an admitted one), and this one reads a 32-bit binding into
// Binding as it is, where it matches no keyed binding (none is below
// 2^32): such a ticket, if bound, opens as a new visitor. A version 1 admitted ticket has no Until: its
// session was counted to its Cell, which is taken as its Until.
const (
	flagAdmittedAt  = 1 << 0
	flagCountedAt   = 1 << 1
	flagNextCheckIn = 1 << 2
	flagCell        = 1 << 3
	flagPlace       = 1 << 4
	flagDrewAt      = 1 << 5
	flagUntil       = 1 << 6
	flagBack        = 1 << 7
	flagBinding     = 1 << 8
	flagPosition    = 1 << 9
	flagJoining     = 1 << 10
	flagAnnounced   = 1 << 11
	flagBinding64   = 1 << 12
	flagsKnownV1    = flagAdmittedAt | flagCountedAt | flagNextCheckIn | flagCell | flagPlace | flagDrewAt
	flagsKnown      = flagsKnownV1 | flagUntil | flagBack | flagBinding | flagPosition | flagJoining | flagAnnounced | flagBinding64
)

// maxPayloadLen bounds the encoded ticket: the fixed fields, two bytes of
// flags, and each field at the longest its range allows: an arrival under
// 2^45 ms (7 bytes), five millisecond deltas and two second deltas within
// the range (7 and 6 bytes as zig-zag varints), the binding (8), a position
// under 2^35 (5), an announced wait within a year (5) and a jitter within an
// hour (4). TestPayloadBound checks the extremes.
const maxPayloadLen = 8 + 1 + 2 + 7 + 5*7 + 2*6 + 8 + 5 + 5 + 4

// maxJitter is the largest Jitter, either way, a ticket may carry. Jitter is a small
// offset on the refresh interval; anything near this is a bug or a forgery.
const maxJitter = time.Hour

// The range of times a ticket may hold: from 2020-01-01T00:00:00Z (usher
// did not exist before) to just before 3000-01-01T00:00:00Z, in unix seconds
// (for Cell) and milliseconds (for times). A test checks the numbers.
const (
	minSec  = 1577836800
	maxSec  = 32503680000 - 1
	minTime = minSec * 1000
	maxTime = maxSec*1000 + 999
)

// maxPosition bounds a ticket's Position (2^35 - 1: more people than live).
const maxPosition = 1<<35 - 1

// maxAnnounced bounds a ticket's Announced wait: a year (5 bytes of
// milliseconds).
const maxAnnounced = 366 * 24 * time.Hour

// errPayload is returned by decodePayload; Open reports it as malformed.
var errPayload = errors.New("bad payload")

// checkTicket reports why t cannot be sealed, so that every sealed ticket
// opens again.
func checkTicket(t *usher.Ticket) error {
	switch {
	case t.State != usher.Waiting && t.State != usher.Admitted:
		return fmt.Errorf("state %d is neither waiting nor admitted", t.State)
	case t.Jitter < -maxJitter || t.Jitter > maxJitter:
		return fmt.Errorf("jitter %v out of range [-%v, %v]", t.Jitter, maxJitter, maxJitter)
	case t.Cell != 0 && (t.Cell < minSec || t.Cell > maxSec):
		return fmt.Errorf("cell %d out of range", t.Cell)
	case t.Place != 0 && (t.Place < minSec || t.Place > maxSec):
		return fmt.Errorf("place %d out of range", t.Place)
	case t.Position < 0 || t.Position > maxPosition:
		return fmt.Errorf("position %d out of range", t.Position)
	case t.Announced < 0 || t.Announced > maxAnnounced:
		return fmt.Errorf("announced wait %v out of range [0, %v]", t.Announced, maxAnnounced)
	}
	if ms := t.ArrivedAt.UnixMilli(); t.ArrivedAt.IsZero() || !inRange(ms) {
		return fmt.Errorf("arrival time %v out of range", t.ArrivedAt)
	}
	for _, f := range []struct {
		name string
		t    time.Time
	}{
		{"admission", t.AdmittedAt},
		{"counted", t.CountedAt},
		{"next check-in", t.NextCheckIn},
		{"draw", t.DrewAt},
		{"session end", t.Until},
	} {
		if !f.t.IsZero() && !inRange(f.t.UnixMilli()) {
			return fmt.Errorf("%s time %v out of range", f.name, f.t)
		}
	}
	return nil
}

func inRange(ms int64) bool { return ms >= minTime && ms <= maxTime }

// appendPayload appends the encoding of t, which checkTicket accepted, to b.
func appendPayload(b []byte, t *usher.Ticket) []byte {
	arrived := t.ArrivedAt.UnixMilli()
	var flags uint64
	if !t.AdmittedAt.IsZero() {
		flags |= flagAdmittedAt
	}
	if !t.CountedAt.IsZero() {
		flags |= flagCountedAt
	}
	if !t.NextCheckIn.IsZero() {
		flags |= flagNextCheckIn
	}
	if t.Cell != 0 {
		flags |= flagCell
	}
	if t.Place != 0 {
		flags |= flagPlace
	}
	if !t.DrewAt.IsZero() {
		flags |= flagDrewAt
	}
	if !t.Until.IsZero() {
		flags |= flagUntil
	}
	if t.Back {
		flags |= flagBack
	}
	if t.Joining {
		flags |= flagJoining
	}
	if t.Binding != 0 {
		flags |= flagBinding64
	}
	if t.Position != 0 {
		flags |= flagPosition
	}
	if t.Announced >= time.Millisecond {
		flags |= flagAnnounced
	}
	b = append(b, t.VisitorID[:]...)
	b = append(b, byte(t.State))
	b = binary.AppendUvarint(b, flags)
	b = binary.AppendUvarint(b, uint64(arrived))
	if flags&flagAdmittedAt != 0 {
		b = binary.AppendVarint(b, t.AdmittedAt.UnixMilli()-arrived)
	}
	if flags&flagCountedAt != 0 {
		b = binary.AppendVarint(b, t.CountedAt.UnixMilli()-arrived)
	}
	if flags&flagNextCheckIn != 0 {
		b = binary.AppendVarint(b, t.NextCheckIn.UnixMilli()-arrived)
	}
	if flags&flagCell != 0 {
		b = binary.AppendVarint(b, t.Cell-t.ArrivedAt.Unix())
	}
	if flags&flagPlace != 0 {
		b = binary.AppendVarint(b, t.Place-t.ArrivedAt.Unix())
	}
	if flags&flagDrewAt != 0 {
		b = binary.AppendVarint(b, t.DrewAt.UnixMilli()-arrived)
	}
	if flags&flagUntil != 0 {
		b = binary.AppendVarint(b, t.Until.UnixMilli()-arrived)
	}
	if flags&flagBinding64 != 0 {
		b = binary.BigEndian.AppendUint64(b, t.Binding)
	}
	if flags&flagPosition != 0 {
		b = binary.AppendUvarint(b, uint64(t.Position))
	}
	if flags&flagAnnounced != 0 {
		b = binary.AppendUvarint(b, uint64(t.Announced/time.Millisecond))
	}
	return binary.AppendVarint(b, int64(t.Jitter/time.Millisecond))
}

// decodePayload decodes b, which must hold exactly one encoded ticket of
// payload version v (1 or 2) with values in range. It returns errPayload for
// anything else.
func decodePayload(b []byte, v byte) (usher.Ticket, error) {
	if len(b) < 8+1+1 || len(b) > maxPayloadLen {
		return usher.Ticket{}, errPayload
	}
	var t usher.Ticket
	copy(t.VisitorID[:], b[:8])
	t.State = usher.TicketState(b[8])
	known := uint64(flagsKnown)
	if v == 1 {
		known = flagsKnownV1
	}
	d := decoder{b: b[9:]}
	flags := d.uvarint()
	if d.bad || (t.State != usher.Waiting && t.State != usher.Admitted) || flags&^known != 0 {
		return usher.Ticket{}, errPayload
	}
	u := d.uvarint()
	if u < minTime || u > maxTime {
		return usher.Ticket{}, errPayload
	}
	arrived := int64(u)
	t.ArrivedAt = time.UnixMilli(arrived).UTC()
	if flags&flagAdmittedAt != 0 {
		t.AdmittedAt = d.time(arrived)
	}
	if flags&flagCountedAt != 0 {
		t.CountedAt = d.time(arrived)
	}
	if flags&flagNextCheckIn != 0 {
		t.NextCheckIn = d.time(arrived)
	}
	if flags&flagCell != 0 {
		t.Cell = d.second(t.ArrivedAt.Unix())
	}
	if flags&flagPlace != 0 {
		t.Place = d.second(t.ArrivedAt.Unix())
	}
	if flags&flagDrewAt != 0 {
		t.DrewAt = d.time(arrived)
	}
	if flags&flagUntil != 0 {
		t.Until = d.time(arrived)
	}
	t.Back = flags&flagBack != 0
	t.Joining = flags&flagJoining != 0
	switch flags & (flagBinding | flagBinding64) {
	case flagBinding:
		t.Binding = uint64(d.uint32())
	case flagBinding64:
		t.Binding = d.uint64()
	case flagBinding | flagBinding64:
		d.fail()
	}
	if flags&flagPosition != 0 {
		if p := d.uvarint(); p == 0 || p > maxPosition {
			d.fail()
		} else {
			t.Position = int64(p)
		}
	}
	if flags&flagAnnounced != 0 {
		if a := d.uvarint(); a == 0 || a > uint64(maxAnnounced/time.Millisecond) {
			d.fail()
		} else {
			t.Announced = time.Duration(a) * time.Millisecond
		}
	}
	if j := d.varint(); j < -int64(maxJitter/time.Millisecond) || j > int64(maxJitter/time.Millisecond) {
		d.fail()
	} else {
		t.Jitter = time.Duration(j) * time.Millisecond
	}
	if d.bad || len(d.b) != 0 || (flags&(flagBinding|flagBinding64) != 0 && t.Binding == 0) {
		return usher.Ticket{}, errPayload
	}
	if v == 1 && t.State == usher.Admitted && t.Cell != 0 {
		t.Until = time.Unix(t.Cell, 0).UTC()
	}
	return t, nil
}

// uint32 reads 4 bytes, big-endian.
func (d *decoder) uint32() uint32 {
	if len(d.b) < 4 {
		d.bad = true
		d.b = nil
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

// uint64 reads 8 bytes, big-endian.
func (d *decoder) uint64() uint64 {
	if len(d.b) < 8 {
		d.bad = true
		d.b = nil
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

// decoder reads varints from b and remembers the first failure, so that
// decodePayload checks once at the end.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) fail() { d.bad = true }

// second reads a second as a delta from sec, in range.
func (d *decoder) second(sec int64) int64 {
	delta := d.varint()
	// Bound the delta before adding, so the sum cannot overflow.
	if delta < minSec-sec || delta > maxSec-sec {
		d.fail()
		return 0
	}
	return sec + delta
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad = true
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

// time reads a millisecond delta from arrived and returns the time, which
// must be in range and not zero.
func (d *decoder) time(arrived int64) time.Time {
	delta := d.varint()
	// Bound the delta before adding, so the sum cannot overflow.
	if delta < minTime-arrived || delta > maxTime-arrived {
		d.bad = true
		return time.Time{}
	}
	return time.UnixMilli(arrived + delta).UTC()
}
