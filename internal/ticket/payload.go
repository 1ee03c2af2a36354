package ticket

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/usherhq/usher"
)

// The plaintext of a sealed ticket (payload version 1, the only one, tied to
// format version 1):
//
//	VisitorID   8 bytes
//	State       1 byte: usher.Waiting or usher.Admitted
//	flags       1 byte: which optional fields follow (bits below)
//	ArrivedAt   uvarint: unix milliseconds
//	AdmittedAt  varint: milliseconds from ArrivedAt   (if flagAdmittedAt)
//	CountedAt   varint: milliseconds from ArrivedAt   (if flagCountedAt)
//	NextCheckIn varint: milliseconds from ArrivedAt   (if flagNextCheckIn)
//	Cell        varint: seconds from ArrivedAt's unix second (if flagCell)
//	Place       varint: seconds from ArrivedAt's unix second (if flagPlace)
//	DrewAt      varint: milliseconds from ArrivedAt   (if flagDrewAt)
//	Jitter      varint: milliseconds, either way
//
// A zero time.Time or a zero Cell is left out and its flag cleared, so it
// comes back zero. Nothing may follow Jitter.
const (
	flagAdmittedAt  = 1 << 0
	flagCountedAt   = 1 << 1
	flagNextCheckIn = 1 << 2
	flagCell        = 1 << 3
	flagPlace       = 1 << 4
	flagDrewAt      = 1 << 5
	flagsKnown      = flagAdmittedAt | flagCountedAt | flagNextCheckIn | flagCell | flagPlace | flagDrewAt
)

// maxPayloadLen bounds the encoded ticket: the fixed fields, a uvarint of
// ArrivedAt, six varints and the jitter.
const maxPayloadLen = 8 + 1 + 1 + 8*binary.MaxVarintLen64

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
	var flags byte
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
	b = append(b, t.VisitorID[:]...)
	b = append(b, byte(t.State), flags)
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
	return binary.AppendVarint(b, int64(t.Jitter/time.Millisecond))
}

// decodePayload decodes b, which must hold exactly one encoded ticket with
// values in range. It returns errPayload for anything else.
func decodePayload(b []byte) (usher.Ticket, error) {
	if len(b) < 8+1+1 || len(b) > maxPayloadLen {
		return usher.Ticket{}, errPayload
	}
	var t usher.Ticket
	copy(t.VisitorID[:], b[:8])
	t.State = usher.TicketState(b[8])
	flags := b[9]
	if (t.State != usher.Waiting && t.State != usher.Admitted) || flags&^flagsKnown != 0 {
		return usher.Ticket{}, errPayload
	}
	d := decoder{b: b[10:]}
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
	if j := d.varint(); j < -int64(maxJitter/time.Millisecond) || j > int64(maxJitter/time.Millisecond) {
		d.fail()
	} else {
		t.Jitter = time.Duration(j) * time.Millisecond
	}
	if d.bad || len(d.b) != 0 {
		return usher.Ticket{}, errPayload
	}
	return t, nil
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
