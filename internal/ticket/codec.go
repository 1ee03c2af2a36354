package ticket

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/usherhq/usher"
	"golang.org/x/crypto/chacha20poly1305"
)

// A sealed ticket (format version 2) is, in unpadded URL-safe base64:
//
//	version    1 byte: 2 (1 still opens: its payload is version 1)
//	idLen      1 byte: 1 to 16
//	keyID      idLen bytes
//	nonce      24 bytes, random
//	ciphertext XChaCha20-Poly1305 of the payload (payload.go), 16-byte tag
//
// The additional data is the header (version, idLen, keyID) followed by the
// room id and the cookie name, each preceded by its length as a uvarint, so
// a ticket opens only in the room and under the cookie name it was sealed
// for.
const (
	formatVersion = 2
	nonceSize     = chacha20poly1305.NonceSizeX
	tagSize       = chacha20poly1305.Overhead
	minPayloadLen = 8 + 1 + 1 + 1 + 1 // fixed fields, ArrivedAt, Jitter
	minRawLen     = 2 + 1 + nonceSize + minPayloadLen + tagSize
	maxRawLen     = 2 + maxKeyIDLen + nonceSize + maxPayloadLen + tagSize
	// maxValueLen is the encoded length of the longest sealed ticket.
	maxValueLen = (maxRawLen*8 + 5) / 6
)

// Even the longest ticket the format allows fits in 200 bytes of cookie.
const _ = uint(200 - 1 - maxValueLen)

// ErrInvalid is wrapped by every error of Open: the value is not a ticket
// this ring sealed for this room and cookie name. The visitor holding it is
// a new visitor.
var ErrInvalid = errors.New("invalid ticket")

// The errors of Open. They say no more than which step failed.
var (
	errMalformed  = fmt.Errorf("%w: malformed", ErrInvalid)
	errUnknownKey = fmt.Errorf("%w: unknown key", ErrInvalid)
	errAuth       = fmt.Errorf("%w: authentication failed", ErrInvalid)
)

// cookieEncoding rejects the non-canonical encodings plain RawURLEncoding
// accepts (stray bits in the last character); decode rejects the line breaks
// it skips. So a value opens only as Seal wrote it.
var cookieEncoding = base64.RawURLEncoding.Strict()

// Seal returns t sealed with the ring's first key for the room and the
// cookie name, as a cookie value of fewer than 200 URL-safe characters.
// Times and Jitter are kept to the millisecond; times come back in UTC. It
// fails on an empty ring and on a ticket that Open would reject: a State
// other than usher.Waiting or usher.Admitted, a Jitter over an hour either
// way, an ArrivedAt that is zero or outside the years 2020 to 2999, or
// another time or Cell set but outside them.
func (r *Ring) Seal(t *usher.Ticket, room, cookieName string) (string, error) {
	if r == nil || len(r.keys) == 0 {
		return "", errors.New("seal ticket: empty key ring")
	}
	if err := checkTicket(t); err != nil {
		return "", fmt.Errorf("seal ticket: %w", err)
	}
	k := &r.keys[0]
	// One allocation holds the additional data, the raw ticket and its
	// encoding.
	adLen := additionalDataLen(len(k.id), room, cookieName)
	buf := make([]byte, adLen+maxRawLen+maxValueLen)
	raw := buf[adLen : adLen : adLen+maxRawLen]
	raw = append(raw, formatVersion, byte(len(k.id)))
	raw = append(raw, k.id...)
	hdr := len(raw)
	raw = raw[:hdr+nonceSize]
	nonce := raw[hdr:]
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal ticket: read nonce: %w", err)
	}
	raw = appendPayload(raw, t)
	ad := appendAdditionalData(buf[:0:adLen], raw[:hdr], room, cookieName)
	raw = k.aead.Seal(raw[:hdr+nonceSize], nonce, raw[hdr+nonceSize:], ad)
	out := buf[adLen+maxRawLen:]
	n := cookieEncoding.EncodedLen(len(raw))
	cookieEncoding.Encode(out, raw)
	return string(out[:n]), nil
}

// Open returns the ticket in value if one of the ring's keys sealed it for
// the room and the cookie name. Every error wraps ErrInvalid and says only
// "malformed", "unknown key" or "authentication failed". Open never panics,
// whatever value holds.
//
// The ring remembers the tickets it opened (a bounded cache, see
// openCache): opening the same value again, as every request of an
// admitted visitor does, skips the decryption. What Open returns does not
// depend on the time, only on the value and the ring's keys, which never
// change, so a remembered ticket is exactly what opening it again gives.
func (r *Ring) Open(value, room, cookieName string) (usher.Ticket, error) {
	if r != nil {
		if t, ok := r.opened.get(value, room, cookieName); ok {
			return t, nil
		}
	}
	t, err := r.open(value, room, cookieName)
	// Only admitted tickets are remembered: they come back unchanged on
	// every request of the visit. A waiter's ticket is sealed anew at each
	// check-in, so its value comes once; remembering it would fill the
	// cache with entries no request reads (about 7 MB of usher's heap at a
	// million waiters) and push out the admitted ones.
	if err == nil && t.State == usher.Admitted {
		r.opened.put(value, room, cookieName, t)
	}
	return t, err
}

// open is Open without the cache.
func (r *Ring) open(value, room, cookieName string) (usher.Ticket, error) {
	if len(value) > maxValueLen || len(value) < (minRawLen*8+5)/6 {
		return usher.Ticket{}, errMalformed
	}
	// One allocation holds a copy of value (Decode takes bytes), the raw
	// ticket and the additional data.
	buf := make([]byte, maxValueLen+maxRawLen+additionalDataLen(maxKeyIDLen, room, cookieName))
	src := buf[:copy(buf, value)]
	raw := buf[maxValueLen : maxValueLen+maxRawLen]
	n, err := cookieEncoding.Decode(raw, src)
	if err != nil || cookieEncoding.EncodedLen(n) != len(value) {
		return usher.Ticket{}, errMalformed
	}
	raw = raw[:n]
	if len(raw) < minRawLen || (raw[0] != formatVersion && raw[0] != 1) {
		return usher.Ticket{}, errMalformed
	}
	idLen := int(raw[1])
	hdr := 2 + idLen
	if idLen == 0 || idLen > maxKeyIDLen || len(raw) < hdr+nonceSize+minPayloadLen+tagSize {
		return usher.Ticket{}, errMalformed
	}
	if r == nil {
		return usher.Ticket{}, errUnknownKey
	}
	k := r.key(raw[2:hdr])
	if k == nil {
		return usher.Ticket{}, errUnknownKey
	}
	ad := appendAdditionalData(buf[maxValueLen+maxRawLen:maxValueLen+maxRawLen], raw[:hdr], room, cookieName)
	nonce := raw[hdr : hdr+nonceSize]
	ct := raw[hdr+nonceSize:]
	pt, err := k.aead.Open(ct[:0], nonce, ct, ad)
	if err != nil {
		return usher.Ticket{}, errAuth
	}
	t, err := decodePayload(pt, raw[0])
	if err != nil {
		return usher.Ticket{}, errMalformed
	}
	return t, nil
}

// additionalDataLen is the most bytes appendAdditionalData appends for a
// header with a key id of idLen bytes.
func additionalDataLen(idLen int, room, cookieName string) int {
	return 2 + idLen + 2*binary.MaxVarintLen64 + len(room) + len(cookieName)
}

// appendAdditionalData appends to b the additional data that binds a ticket
// to its header, room and cookie name.
func appendAdditionalData(b, hdr []byte, room, cookieName string) []byte {
	b = append(b, hdr...)
	b = binary.AppendUvarint(b, uint64(len(room)))
	b = append(b, room...)
	b = binary.AppendUvarint(b, uint64(len(cookieName)))
	return append(b, cookieName...)
}
