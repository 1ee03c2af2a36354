package ticket

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

func TestSealOpenRoundTrip(t *testing.T) {
	r := MustRing(t, "k1")
	waiterAtBucketStart := minimalTicket()
	waiterAtBucketStart.Cell = waiterAtBucketStart.ArrivedAt.Unix() // delta 0, not "not counted"
	earliest := minimalTicket()
	earliest.ArrivedAt = time.UnixMilli(minTime)
	earliest.Cell = minSec
	latest := fullTicket()
	latest.ArrivedAt = time.UnixMilli(maxTime)
	latest.AdmittedAt = time.UnixMilli(minTime) // far in the past of ArrivedAt
	latest.Cell = maxSec
	latest.Jitter = maxJitter
	local := fullTicket()
	loc := time.FixedZone("UTC+5:30", 5*3600+1800)
	local.ArrivedAt = local.ArrivedAt.In(loc)
	local.CountedAt = local.CountedAt.In(loc)
	monotonic := minimalTicket()
	monotonic.ArrivedAt = time.Now()
	monotonic.NextCheckIn = monotonic.ArrivedAt.Add(-time.Second) // before arrival
	for _, tc := range []struct {
		name string
		in   usher.Ticket
	}{
		{"full", fullTicket()},
		{"minimal", minimalTicket()},
		{"cell at arrival second", waiterAtBucketStart},
		{"earliest times", earliest},
		{"latest times", latest},
		{"other time zone", local},
		{"monotonic clock and negative delta", monotonic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := MustSeal(t, r, &tc.in)
			got, err := r.Open(v, testRoom, testCookie)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if d := diffTickets(got, truncated(tc.in)); d != "" {
				t.Errorf("round trip: %s", d)
			}
		})
	}
	t.Run("zero times stay zero", func(t *testing.T) {
		in := minimalTicket()
		got, err := r.Open(MustSeal(t, r, &in), testRoom, testCookie)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if !got.AdmittedAt.IsZero() || !got.CountedAt.IsZero() || !got.NextCheckIn.IsZero() || got.Cell != 0 || got.Jitter != 0 {
			t.Errorf("zero fields came back set: %+v", got)
		}
	})
	t.Run("nonce is fresh", func(t *testing.T) {
		in := fullTicket()
		if a, b := MustSeal(t, r, &in), MustSeal(t, r, &in); a == b {
			t.Errorf("two seals of one ticket are equal: %s", a)
		}
	})
}

// TestGolden checks that a ticket sealed by an earlier build still opens:
// format version 1 must not change. Run with -update to reseal it.
func TestGolden(t *testing.T) {
	r := MustRing(t, "k1")
	want := fullTicket()
	if *update {
		writeSeed(t, goldenFile, MustSeal(t, r, &want))
	}
	got, err := r.Open(readSeed(t, goldenFile), testRoom, testCookie)
	if err != nil {
		t.Fatalf("Open(golden): %v", err)
	}
	if d := diffTickets(got, truncated(want)); d != "" {
		t.Errorf("golden: %s", d)
	}
}

// checkInvalid fails t unless err is one of Open's errors and tk is zero.
func checkInvalid(t *testing.T, tk usher.Ticket, err error) {
	t.Helper()
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Open error = %v, want one wrapping ErrInvalid", err)
	}
	switch err.Error() {
	case "invalid ticket: malformed", "invalid ticket: unknown key", "invalid ticket: authentication failed":
	default:
		t.Errorf("Open error %q says more than it should", err)
	}
	if tk != (usher.Ticket{}) {
		t.Errorf("Open returned a ticket with its error: %+v", tk)
	}
}

func TestOpenAttacks(t *testing.T) {
	r := MustRing(t, "k1")
	in := fullTicket()
	valid := MustSeal(t, r, &in)
	raw, err := base64.RawURLEncoding.DecodeString(valid)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	with := func(f func(b []byte) []byte) string { return enc(f(bytes.Clone(raw))) }
	random := func(n int) []byte {
		b := make([]byte, n)
		rand.Read(b)
		return b
	}

	type attack struct {
		name, value, room, cookie string
	}
	attacks := []attack{
		{name: "empty"},
		{name: "non-base64", value: "!!not*base64!!" + valid[14:]},
		{name: "standard alphabet", value: strings.NewReplacer("-", "+", "_", "/").Replace(enc(append(bytes.Repeat([]byte{0xfb, 0xff}, 30), raw...)))},
		{name: "padded", value: func() string {
			small := minimalTicket()
			raw, _ := base64.RawURLEncoding.DecodeString(MustSeal(t, r, &small))
			v := base64.URLEncoding.EncodeToString(raw)
			if !strings.HasSuffix(v, "=") {
				t.Fatalf("padded value %q has no padding", v)
			}
			return v
		}()},
		{name: "padding appended", value: valid + "=="},
		{name: "line break inside", value: valid[:40] + "\n" + valid[40:]},
		{name: "carriage return inside", value: valid[:40] + "\r" + valid[40:]},
		{name: "trailing space", value: valid + " "},
		{name: "huge", value: strings.Repeat("A", 1<<20)},
		{name: "huge valid prefix", value: valid + strings.Repeat("A", 1<<20)},
		{name: "version 0", value: with(func(b []byte) []byte { b[0] = 0; return b })},
		{name: "version 1 header on a version 2 ticket", value: with(func(b []byte) []byte { b[0] = 1; return b })},
		{name: "version 3", value: with(func(b []byte) []byte { b[0] = 3; return b })},
		{name: "version 255", value: with(func(b []byte) []byte { b[0] = 255; return b })},
		{name: "key id length 0", value: with(func(b []byte) []byte { b[1] = 0; return b })},
		{name: "key id length 17", value: with(func(b []byte) []byte { b[1] = 17; return b })},
		{name: "key id length 255", value: with(func(b []byte) []byte { b[1] = 255; return b })},
		{name: "unknown key id", value: with(func(b []byte) []byte { b[3] = '9'; return b })},
		{name: "sealed by unknown key", value: MustSeal(t, MustRing(t, "k9"), &in)},
		{name: "same id, other secret", value: func() string {
			other, err := NewRing([]usher.Key{{ID: "k1", Secret: testKey("k2").Secret}})
			if err != nil {
				t.Fatal(err)
			}
			return MustSeal(t, other, &in)
		}()},
		{name: "wrong room", value: valid, room: "other", cookie: testCookie},
		{name: "wrong cookie name", value: valid, room: testRoom, cookie: "__usher_wr_other"},
		{name: "room and cookie boundary moved", value: valid, room: testRoom + "_", cookie: testCookie[1:]},
		{name: "room and cookie swapped", value: valid, room: testCookie, cookie: testRoom},
		{name: "empty room", value: valid, room: "", cookie: testCookie},
		{name: "extended by a character", value: valid + "A"},
		{name: "extended by a byte", value: with(func(b []byte) []byte { return append(b, 0) })},
		{name: "extended by a block", value: with(func(b []byte) []byte { return append(b, raw[len(raw)-16:]...) })},
		{name: "tag removed", value: with(func(b []byte) []byte { return b[:len(b)-16] })},
		{name: "ciphertext zeroed", value: with(func(b []byte) []byte { clear(b[28:]); return b })},
		{name: "forged random bytes", value: enc(random(len(raw)))},
		{name: "forged with valid header", value: enc(append(bytes.Clone(raw[:4]), random(len(raw)-4)...))},
		{name: "header of one ticket, body of another", value: func() string {
			other := MustSeal(t, r, &in)
			return valid[:8] + other[8:]
		}()},
	}
	for i := range 64 {
		attacks = append(attacks, attack{name: "forged random length " + string(rune('a'+i%26)), value: enc(random(i * 3))})
	}
	for i := range len(valid) {
		attacks = append(attacks, attack{name: "truncated value", value: valid[:i]})
	}
	for i := range len(raw) {
		attacks = append(attacks, attack{name: "truncated raw", value: enc(raw[:i])})
	}
	for i := range len(raw) {
		for bit := range 8 {
			attacks = append(attacks, attack{name: "bit flipped", value: with(func(b []byte) []byte { b[i] ^= 1 << bit; return b })})
		}
		attacks = append(attacks, attack{name: "byte flipped", value: with(func(b []byte) []byte { b[i] ^= 0xff; return b })})
	}
	for i := range len(valid) {
		c := byte('A')
		if valid[i] == 'A' {
			c = 'B'
		}
		attacks = append(attacks, attack{name: "character changed", value: valid[:i] + string(c) + valid[i+1:]})
	}
	for _, a := range attacks {
		if a.room == "" && a.cookie == "" && a.name != "empty room" {
			a.room, a.cookie = testRoom, testCookie
		}
		t.Run(a.name, func(t *testing.T) {
			tk, err := r.Open(a.value, a.room, a.cookie)
			checkInvalid(t, tk, err)
		})
	}
	t.Run("valid still opens", func(t *testing.T) {
		if _, err := r.Open(valid, testRoom, testCookie); err != nil {
			t.Fatalf("Open(valid): %v", err)
		}
	})
}

// sealedKeyID returns the key id in the header of a sealed ticket.
func sealedKeyID(t *testing.T, value string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(raw) < 2 || len(raw) < 2+int(raw[1]) {
		t.Fatalf("not a sealed ticket: %q", value)
	}
	return string(raw[2 : 2+raw[1]])
}

// sealPayload seals an arbitrary payload with the ring's first key, as Seal
// would, to test what Open does with a payload that authenticates but is bad.
func sealPayload(t *testing.T, r *Ring, payload []byte) string {
	t.Helper()
	k := r.keys[0]
	hdr := append([]byte{formatVersion, byte(len(k.id))}, k.id...)
	nonce := make([]byte, nonceSize)
	ad := appendAdditionalData(nil, hdr, testRoom, testCookie)
	raw := append(append(hdr, nonce...), k.aead.Seal(nil, nonce, payload, ad)...)
	return base64.RawURLEncoding.EncodeToString(raw)
}

// TestOpenVersion1 opens a ticket sealed in format version 1, as usher
// sealed them before Until existed: an admitted one keeps its session to
// its cell.
func TestOpenVersion1(t *testing.T) {
	r := MustRing(t, "k1")
	k := r.keys[0]
	b := append(make([]byte, 8), byte(usher.Admitted), flagAdmittedAt|flagCountedAt|flagCell)
	b = binary.AppendUvarint(b, uint64(minTime+5000))
	b = binary.AppendVarint(b, 1000)
	b = binary.AppendVarint(b, 1000)
	b = binary.AppendVarint(b, 300)
	b = binary.AppendVarint(b, 0)
	hdr := append([]byte{1, byte(len(k.id))}, k.id...)
	nonce := make([]byte, nonceSize)
	ad := appendAdditionalData(nil, hdr, testRoom, testCookie)
	raw := append(append(hdr, nonce...), k.aead.Seal(nil, nonce, b, ad)...)
	tk, err := r.Open(base64.RawURLEncoding.EncodeToString(raw), testRoom, testCookie)
	if err != nil {
		t.Fatal(err)
	}
	if tk.State != usher.Admitted || tk.Cell != minSec+5+300 || !tk.Until.Equal(time.Unix(tk.Cell, 0)) {
		t.Errorf("opened %+v", tk)
	}
}

func TestOpenAuthenticatedBadPayload(t *testing.T) {
	r := MustRing(t, "k1")
	in := minimalTicket()
	good := appendPayload(nil, &in)
	for _, tc := range []struct {
		name    string
		payload []byte
	}{
		{"empty", nil},
		{"trailing byte", append(bytes.Clone(good), 0)},
		{"state 0", func() []byte { b := bytes.Clone(good); b[8] = 0; return b }()},
		{"state 3", func() []byte { b := bytes.Clone(good); b[8] = 3; return b }()},
		{"unknown flag", func() []byte { b := bytes.Clone(good); b[9] = 0x10; return b }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodePayload(tc.payload, formatVersion); err == nil {
				t.Fatal("decodePayload accepted it")
			}
			tk, err := r.Open(sealPayload(t, r, tc.payload), testRoom, testCookie)
			checkInvalid(t, tk, err)
		})
	}
	t.Run("control: good payload opens", func(t *testing.T) {
		if _, err := r.Open(sealPayload(t, r, good), testRoom, testCookie); err != nil {
			t.Fatalf("Open: %v", err)
		}
	})
}

func TestRotation(t *testing.T) {
	old := MustRing(t, "k1")
	rotated := MustRing(t, "k2", "k1")
	retired := MustRing(t, "k2")
	in := fullTicket()
	v1 := MustSeal(t, old, &in)

	got, err := rotated.Open(v1, testRoom, testCookie)
	if err != nil {
		t.Fatalf("ring [k2 k1] cannot open a k1 ticket: %v", err)
	}
	if d := diffTickets(got, truncated(in)); d != "" {
		t.Errorf("opened by [k2 k1]: %s", d)
	}
	v2 := MustSeal(t, rotated, &got)
	if id := sealedKeyID(t, v2); id != "k2" {
		t.Errorf("ring [k2 k1] resealed with key %q, want k2", id)
	}
	if rotated.KeyID() != "k2" {
		t.Errorf("KeyID = %q, want k2", rotated.KeyID())
	}
	for _, tc := range []struct {
		name  string
		ring  *Ring
		value string
		ok    bool
	}{
		{"k2 ticket opens in [k2]", retired, v2, true},
		{"k2 ticket opens in [k2 k1]", rotated, v2, true},
		{"k1 ticket rejected by [k2]", retired, v1, false},
		{"k2 ticket rejected by [k1]", old, v2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk, err := tc.ring.Open(tc.value, testRoom, testCookie)
			if tc.ok {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				return
			}
			checkInvalid(t, tk, err)
			if !strings.Contains(err.Error(), "unknown key") {
				t.Errorf("Open error = %v, want unknown key", err)
			}
		})
	}
}

func TestSize(t *testing.T) {
	worst := fullTicket()
	worst.VisitorID = [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	worst.ArrivedAt = time.UnixMilli(maxTime)
	worst.AdmittedAt = time.UnixMilli(minTime)
	worst.CountedAt = time.UnixMilli(minTime)
	worst.NextCheckIn = time.UnixMilli(minTime)
	worst.Cell = minSec
	worst.Jitter = maxJitter
	for _, tc := range []struct {
		name  string
		keyID string
		in    usher.Ticket
	}{
		{"full ticket", "k1", fullTicket()},
		{"minimal ticket", "k1", minimalTicket()},
		{"full ticket, longest key id", strings.Repeat("k", maxKeyIDLen), fullTicket()},
		{"worst case", strings.Repeat("k", maxKeyIDLen), worst},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := MustSeal(t, MustRing(t, tc.keyID), &tc.in)
			t.Logf("%d bytes: %s", len(v), v)
			if len(v) >= 200 || len(v) > maxValueLen {
				t.Errorf("cookie value is %d bytes, want under 200 and at most %d", len(v), maxValueLen)
			}
		})
	}
}

func TestSealRejects(t *testing.T) {
	r := MustRing(t, "k1")
	mod := func(f func(*usher.Ticket)) usher.Ticket {
		tk := fullTicket()
		f(&tk)
		return tk
	}
	for _, tc := range []struct {
		name string
		in   usher.Ticket
		want string
	}{
		{"zero ticket", usher.Ticket{}, "state 0"},
		{"state 3", mod(func(t *usher.Ticket) { t.State = 3 }), "state 3"},
		{"zero arrival", mod(func(t *usher.Ticket) { t.ArrivedAt = time.Time{} }), "arrival time"},
		{"arrival in 2019", mod(func(t *usher.Ticket) { t.ArrivedAt = time.Date(2019, 12, 31, 23, 59, 59, 0, time.UTC) }), "arrival time"},
		{"arrival in 3000", mod(func(t *usher.Ticket) { t.ArrivedAt = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC) }), "arrival time"},
		{"admission in 1970", mod(func(t *usher.Ticket) { t.AdmittedAt = time.Unix(1, 0) }), "admission time"},
		{"counted in 3000", mod(func(t *usher.Ticket) { t.CountedAt = time.Date(3001, 1, 1, 0, 0, 0, 0, time.UTC) }), "counted time"},
		{"next check-in before 2020", mod(func(t *usher.Ticket) { t.NextCheckIn = time.Unix(-1, 0) }), "next check-in time"},
		{"negative cell", mod(func(t *usher.Ticket) { t.Cell = -1 }), "cell"},
		{"huge cell", mod(func(t *usher.Ticket) { t.Cell = 1 << 62 }), "cell"},
		{"jitter under minus an hour", mod(func(t *usher.Ticket) { t.Jitter = -maxJitter - time.Millisecond }), "jitter"},
		{"jitter over an hour", mod(func(t *usher.Ticket) { t.Jitter = maxJitter + time.Millisecond }), "jitter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := r.Seal(&tc.in, testRoom, testCookie)
			if err == nil {
				t.Fatalf("Seal = %q, want an error", v)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Seal error = %q, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestZeroRing(t *testing.T) {
	in := fullTicket()
	valid := MustSeal(t, MustRing(t, "k1"), &in)
	for _, tc := range []struct {
		name string
		ring *Ring
	}{
		{"nil", nil},
		{"zero", &Ring{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.ring.Seal(&in, testRoom, testCookie); err == nil {
				t.Error("Seal succeeded")
			}
			tk, err := tc.ring.Open(valid, testRoom, testCookie)
			checkInvalid(t, tk, err)
			if id := tc.ring.KeyID(); id != "" {
				t.Errorf("KeyID = %q, want empty", id)
			}
		})
	}
}

func TestConcurrentUse(t *testing.T) {
	r := MustRing(t, "k1", "k2")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				in := fullTicket()
				v, err := r.Seal(&in, testRoom, testCookie)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := r.Open(v, testRoom, testCookie); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkSeal(b *testing.B) {
	r := MustRing(b, "k1")
	in := fullTicket()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Seal(&in, testRoom, testCookie); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpen(b *testing.B) {
	r := MustRing(b, "k2", "k1")
	in := fullTicket()
	v := MustSeal(b, MustRing(b, "k1"), &in)
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.open(v, testRoom, testCookie); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenCached is Open of a value the ring opened before, as on
// every request of an admitted visitor after the first.
func BenchmarkOpenCached(b *testing.B) {
	r := MustRing(b, "k2", "k1")
	in := fullTicket()
	v := MustSeal(b, MustRing(b, "k1"), &in)
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Open(v, testRoom, testCookie); err != nil {
			b.Fatal(err)
		}
	}
}
