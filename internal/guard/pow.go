package guard

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"strings"
	"time"

	"github.com/usherhq/usher"
)

// The proof of work's fixed names and limits.
const (
	// MinDifficulty and MaxDifficulty bound a challenge's difficulty, in
	// leading zero bits of the hash.
	MinDifficulty = 1
	MaxDifficulty = 32
	// DefaultDifficulty is the difficulty a room gets when it sets none:
	// 2^18 attempts expected, a median solve well under half a second in
	// headless Chromium on this project's machines, leaving room for
	// phones several times slower (measured in docs/pow.md).
	DefaultDifficulty = 18
	// DefaultLifetime is how long a challenge may be solved and used.
	DefaultLifetime = 5 * time.Minute
	// DefaultSkew is how far in the future a challenge's issue time may be
	// (another node's clock running ahead) before Verify refuses it.
	DefaultSkew = 30 * time.Second
	// Algorithm names the puzzle in the JSON answer.
	Algorithm = "sha256-leading-zero-bits"
	// Header is the request header that carries a solution, challenge.n.
	Header = "X-Usher-Pow"
	// Cookie is the cookie that carries a solution, challenge.n.
	Cookie = "__usher_pow"
	// MaxSolutionLen is the length of the longest challenge.n Verify
	// can accept; longer values need not be read.
	MaxSolutionLen = maxChallengeLen + 1 + maxCounterLen
)

// A challenge (format version 1) is payload.mac, each in unpadded URL-safe
// base64. The payload is
//
//	version    1 byte: 1
//	keyIDLen   1 byte: 1 to 16
//	keyID      keyIDLen bytes, the key that signed
//	issuedAt   8 bytes, unix seconds, big-endian
//	difficulty 1 byte: 1 to 32
//	id         16 bytes, random: what Spent remembers
//	roomTag    4 bytes: a keyed tag of the room id
//	clientTag  4 bytes: a keyed tag of the client prefix
//
// and mac is HMAC-SHA256 truncated to 16 bytes, under the key derived from
// keyID's secret, of the payload followed by the room id (after a length
// byte) and the client prefix (family, bits, masked address). The room and
// the prefix are bound by the MAC; the two tags only let Verify say which
// of them differs when the MAC fails. A challenge signed with a 2-byte key
// id is 73 characters.
const (
	formatVersion   = 1
	idSize          = 16
	macSize         = 16
	tagSize         = 4
	maxKeyIDLen     = 16
	maxRoomLen      = 255
	fixedLen        = 2 + 8 + 1 + idSize + 2*tagSize
	maxPayloadLen   = fixedLen + maxKeyIDLen
	maxPayloadB64   = (maxPayloadLen*8 + 5) / 6
	macB64          = (macSize*8 + 5) / 6
	maxChallengeLen = maxPayloadB64 + 1 + macB64
	maxCounterLen   = 16 // up to 10^16-1, past 2^53: any counter a browser reaches
	maxClientLen    = 2 + 16
	maxMACInput     = maxPayloadLen + 1 + maxRoomLen + maxClientLen
	hkdfInfo        = "usher proof of work v1"
)

// Verify's errors; each wraps ErrInvalid and names the check that failed,
// for logs. None says anything the client did not send.
var (
	// ErrInvalid is wrapped by every error of Verify: the solution does not
	// earn a ticket.
	ErrInvalid = errors.New("invalid proof of work")
	// ErrMalformed: not a challenge of this format.
	ErrMalformed = fmt.Errorf("%w: malformed challenge", ErrInvalid)
	// ErrBadCounter: n is not a decimal counter (digits, no leading zero,
	// at most 16).
	ErrBadCounter = fmt.Errorf("%w: counter is not a decimal number", ErrInvalid)
	// ErrUnknownKey: the key that signed is not in the ring (rotated out).
	ErrUnknownKey = fmt.Errorf("%w: unknown key", ErrInvalid)
	// ErrOtherRoom: the challenge was issued for another room.
	ErrOtherRoom = fmt.Errorf("%w: issued for another room", ErrInvalid)
	// ErrOtherClient: the challenge was issued to another client prefix.
	ErrOtherClient = fmt.Errorf("%w: issued to another client address", ErrInvalid)
	// ErrBadMAC: the challenge was altered, or forged.
	ErrBadMAC = fmt.Errorf("%w: authentication failed", ErrInvalid)
	// ErrExpired: the challenge's lifetime is over.
	ErrExpired = fmt.Errorf("%w: expired", ErrInvalid)
	// ErrNotYetValid: the challenge was issued further in the future than
	// the clock skew allows.
	ErrNotYetValid = fmt.Errorf("%w: issued in the future", ErrInvalid)
	// ErrTooEasy: the challenge is easier than the room now asks.
	ErrTooEasy = fmt.Errorf("%w: difficulty below the room's", ErrInvalid)
	// ErrNotSolved: the hash has too few leading zero bits.
	ErrNotSolved = fmt.Errorf("%w: not solved", ErrInvalid)
)

// b64 is unpadded URL-safe base64 that refuses non-canonical encodings, so
// a challenge verifies only as Issue wrote it.
var b64 = base64.RawURLEncoding.Strict()

// Options tune a PoW; the zero value is the defaults.
type Options struct {
	// Lifetime is how long a challenge may be solved and used from its
	// issue (0: DefaultLifetime).
	Lifetime time.Duration
	// Skew is how far in the future an issue time may be (0: DefaultSkew;
	// negative: none).
	Skew time.Duration
}

// PoW issues and verifies proof-of-work challenges under a key ring. It is
// immutable and safe for concurrent use.
type PoW struct {
	keys     []macKey
	lifetime time.Duration
	skew     time.Duration
}

// macKey is an HMAC-SHA256 key with its pads ready.
type macKey struct {
	id         string
	ipad, opad [sha256.BlockSize]byte
}

// NewPoW returns a PoW with the keys: keys[0] signs, every key verifies,
// so a key rotated out of the ring still verifies its challenges while it
// is listed. The keys may be the ticket ring's: each secret is only the
// input of HKDF-SHA256 with its own label, so the challenge's MAC key is
// never the ticket's key. Ids are 1-16 of A-Z a-z 0-9 _ -; secrets are at
// least 16 bytes. Every problem is reported.
func NewPoW(keys []usher.Key, opt Options) (*PoW, error) {
	if len(keys) == 0 {
		return nil, errors.New("proof of work: no keys")
	}
	p := &PoW{lifetime: opt.Lifetime, skew: opt.Skew}
	if p.lifetime <= 0 {
		p.lifetime = DefaultLifetime
	}
	switch {
	case p.skew == 0:
		p.skew = DefaultSkew
	case p.skew < 0:
		p.skew = 0
	}
	var errs []error
	seen := map[string]bool{}
	for i, k := range keys {
		switch {
		case !validKeyID(k.ID):
			errs = append(errs, fmt.Errorf("proof of work: key %d of %d: id %q is not 1-%d of A-Z a-z 0-9 _ -", i+1, len(keys), k.ID, maxKeyIDLen))
			continue
		case seen[k.ID]:
			errs = append(errs, fmt.Errorf("proof of work: key %q: id is used by more than one key", k.ID))
			continue
		case len(k.Secret) < 16:
			errs = append(errs, fmt.Errorf("proof of work: key %q: secret must be at least 16 bytes, got %d", k.ID, len(k.Secret)))
			continue
		}
		seen[k.ID] = true
		mk, err := hkdf.Key(sha256.New, k.Secret, nil, hkdfInfo, sha256.Size)
		if err != nil {
			errs = append(errs, fmt.Errorf("proof of work: key %q: %w", k.ID, err))
			continue
		}
		p.keys = append(p.keys, newMACKey(k.ID, mk))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

func newMACKey(id string, key []byte) macKey {
	k := macKey{id: id}
	// key is 32 bytes, shorter than the block: no pre-hashing (RFC 2104).
	copy(k.ipad[:], key)
	copy(k.opad[:], key)
	for i := range k.ipad {
		k.ipad[i] ^= 0x36
		k.opad[i] ^= 0x5c
	}
	return k
}

func validKeyID(id string) bool {
	if id == "" || len(id) > maxKeyIDLen {
		return false
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Lifetime returns how long a challenge may be solved and used.
func (p *PoW) Lifetime() time.Duration { return p.lifetime }

// Challenge is an issued challenge.
type Challenge struct {
	// Value is the challenge text: 73-91 URL-safe characters and one '.'.
	Value string
	// Difficulty is the number of leading zero bits the hash must have.
	Difficulty int
	// IssuedAt is when it was issued, to the second.
	IssuedAt time.Time
	// Expires is when Verify stops accepting it (IssuedAt + lifetime).
	Expires time.Time
}

// Issue returns a new challenge for the room (1-255 bytes) and the
// client's address prefix (see ClientPrefix), with a difficulty of
// MinDifficulty to MaxDifficulty, issued at now (to the second).
func (p *PoW) Issue(room string, client netip.Prefix, difficulty int, now time.Time) (Challenge, error) {
	switch {
	case room == "" || len(room) > maxRoomLen:
		return Challenge{}, fmt.Errorf("issue challenge: room id must be 1-%d bytes, got %d", maxRoomLen, len(room))
	case !client.IsValid():
		return Challenge{}, errors.New("issue challenge: no client prefix")
	case difficulty < MinDifficulty || difficulty > MaxDifficulty:
		return Challenge{}, fmt.Errorf("issue challenge: difficulty must be %d-%d, got %d", MinDifficulty, MaxDifficulty, difficulty)
	case now.Unix() < 0 || now.Unix() > maxUnix:
		return Challenge{}, fmt.Errorf("issue challenge: time %v out of range", now)
	}
	var cl [maxClientLen]byte
	clientBytes := encodeClient(cl[:0], client)
	k := &p.keys[0]
	issued := now.Unix()
	var buf [maxPayloadLen]byte
	payload := append(buf[:0], formatVersion, byte(len(k.id)))
	payload = append(payload, k.id...)
	payload = binary.BigEndian.AppendUint64(payload, uint64(issued))
	payload = append(payload, byte(difficulty))
	var id [idSize]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	payload = append(payload, id[:]...)
	payload = binary.BigEndian.AppendUint32(payload, tag(k, tagRoom, room))
	payload = binary.BigEndian.AppendUint32(payload, tag(k, tagClient, clientBytes))
	n := len(payload)
	mac := k.mac(payload, room, clientBytes)

	out := make([]byte, b64.EncodedLen(n)+1+macB64)
	b64.Encode(out, payload[:n])
	out[b64.EncodedLen(n)] = '.'
	b64.Encode(out[b64.EncodedLen(n)+1:], mac[:])
	at := time.Unix(issued, 0).UTC()
	return Challenge{Value: string(out), Difficulty: difficulty, IssuedAt: at, Expires: at.Add(p.lifetime)}, nil
}

// Solved is a verified solution.
type Solved struct {
	// ID is the challenge's id: spend it (Spent) before issuing a ticket.
	ID [idSize]byte
	// Difficulty is the challenge's difficulty.
	Difficulty int
	// Until is how long the id must stay spent: the challenge's expiry plus
	// the clock skew allowance, so that a node whose clock lags by up to
	// the skew still finds it spent.
	Until time.Time
}

// Verify checks that n solves challenge for the room and the client prefix
// at now, and that the challenge asks at least minDifficulty (the room's
// difficulty now, so raising it refuses easier challenges issued before).
// It checks, in order: n is a decimal counter; the challenge's format; its
// key is in the ring; the MAC (in constant time), and when it fails,
// whether the room or the prefix differ; the issue time is not further in
// the future than the skew and the lifetime is not over (a challenge
// expires at IssuedAt + lifetime exactly); the difficulty; and
// SHA-256(challenge ":" n) has the leading zero bits. Each failure is a
// distinct error wrapping ErrInvalid. Verify does not know whether the
// challenge was used before: spend Solved.ID.
//
// Verify never panics and does not allocate; a challenge or counter longer
// than a solution can be is refused before it is read.
func (p *PoW) Verify(challenge, n, room string, client netip.Prefix, minDifficulty int, now time.Time) (Solved, error) {
	if !validCounter(n) {
		return Solved{}, ErrBadCounter
	}
	if len(challenge) > maxChallengeLen || !validChallengeText(challenge) {
		return Solved{}, ErrMalformed
	}
	dot := strings.IndexByte(challenge, '.')
	if dot < 0 {
		return Solved{}, ErrMalformed
	}
	encPayload, encMAC := challenge[:dot], challenge[dot+1:]
	if len(encPayload) > maxPayloadB64 || len(encMAC) != macB64 {
		return Solved{}, ErrMalformed
	}
	// Decode into arrays on the stack: the strings are copied first so
	// that no conversion allocates.
	var src [maxChallengeLen]byte
	var buf [maxPayloadLen]byte
	var gotMAC [macSize]byte
	copy(src[:], encMAC)
	if m, err := b64.Decode(gotMAC[:], src[:len(encMAC)]); err != nil || m != macSize {
		return Solved{}, ErrMalformed
	}
	copy(src[:], encPayload)
	pl, err := b64.Decode(buf[:], src[:len(encPayload)])
	if err != nil || pl < fixedLen+1 || buf[0] != formatVersion {
		return Solved{}, ErrMalformed
	}
	kl := int(buf[1])
	if kl < 1 || kl > maxKeyIDLen || pl != fixedLen+kl {
		return Solved{}, ErrMalformed
	}
	payload := buf[:pl]
	k := p.key(payload[2 : 2+kl])
	if k == nil {
		return Solved{}, ErrUnknownKey
	}
	rest := payload[2+kl:]
	issued := int64(binary.BigEndian.Uint64(rest[0:8]))
	difficulty := int(rest[8])
	var s Solved
	copy(s.ID[:], rest[9:9+idSize])
	roomTag := binary.BigEndian.Uint32(rest[9+idSize:])
	clientTag := binary.BigEndian.Uint32(rest[9+idSize+tagSize:])

	if len(room) > maxRoomLen {
		return Solved{}, ErrOtherRoom // no challenge is issued for it
	}
	if !client.IsValid() {
		if roomTag != tag(k, tagRoom, room) {
			return Solved{}, ErrOtherRoom
		}
		return Solved{}, ErrOtherClient
	}
	var cl [maxClientLen]byte
	clientBytes := encodeClient(cl[:0], client)
	mac := k.mac(payload, room, clientBytes)
	if subtle.ConstantTimeCompare(mac[:], gotMAC[:]) != 1 {
		// Tags under the key that do not fit either is a forgery (under a
		// guessed key), not a challenge of another room or client.
		otherRoom, otherClient := roomTag != tag(k, tagRoom, room), clientTag != tag(k, tagClient, clientBytes)
		switch {
		case otherRoom && otherClient:
			return Solved{}, ErrBadMAC
		case otherRoom:
			return Solved{}, ErrOtherRoom
		case otherClient:
			return Solved{}, ErrOtherClient
		}
		return Solved{}, ErrBadMAC
	}
	if difficulty < MinDifficulty || difficulty > MaxDifficulty || issued < 0 || issued > maxUnix {
		return Solved{}, ErrMalformed // signed by us, so never; but checked
	}
	at := time.Unix(issued, 0)
	if at.After(now.Add(p.skew)) {
		return Solved{}, ErrNotYetValid
	}
	expires := at.Add(p.lifetime)
	if !now.Before(expires) {
		return Solved{}, ErrExpired
	}
	if difficulty < minDifficulty {
		return Solved{}, ErrTooEasy
	}
	if LeadingZeros(challenge, n) < difficulty {
		return Solved{}, ErrNotSolved
	}
	s.Difficulty = difficulty
	s.Until = expires.Add(p.skew).UTC()
	return s, nil
}

// maxUnix keeps issue times where time arithmetic cannot overflow.
const maxUnix = 1 << 40

// key returns the ring's key with the id, or nil.
func (p *PoW) key(id []byte) *macKey {
	for i := range p.keys {
		if p.keys[i].id == string(id) {
			return &p.keys[i]
		}
	}
	return nil
}

// mac is HMAC-SHA256(k, payload || len(room) || room || client), truncated
// to macSize. The input is built on the stack, so a MAC costs no
// allocation.
func (k *macKey) mac(payload []byte, room string, client []byte) [macSize]byte {
	var in [sha256.BlockSize + maxMACInput]byte
	m := copy(in[:], k.ipad[:])
	m += copy(in[m:], payload)
	in[m] = byte(len(room))
	m++
	m += copy(in[m:], room)
	m += copy(in[m:], client)
	inner := sha256.Sum256(in[:m])
	var out [sha256.BlockSize + sha256.Size]byte
	copy(out[:], k.opad[:])
	copy(out[sha256.BlockSize:], inner[:])
	sum := sha256.Sum256(out[:])
	var mac [macSize]byte
	copy(mac[:], sum[:])
	return mac
}

// encodeClient appends the prefix's canonical form: family (4 or 6), bits,
// masked address. An IPv4-mapped IPv6 prefix is written as IPv4.
func encodeClient(b []byte, client netip.Prefix) []byte {
	client = canonicalPrefix(client)
	a := client.Addr()
	if a.Is4() {
		a4 := a.As4()
		return append(append(b, 4, byte(client.Bits())), a4[:]...)
	}
	a16 := a.As16()
	return append(append(b, 6, byte(client.Bits())), a16[:]...)
}

// canonicalPrefix masks p and unmaps an IPv4-mapped IPv6 prefix.
func canonicalPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

// validChallengeText reports whether s holds only URL-safe base64 and
// '.': the decoder would skip line breaks, and a challenge must verify
// only as Issue wrote it.
func validChallengeText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// validCounter reports whether n is a decimal counter: 1-16 digits, no
// leading zero but "0" itself.
func validCounter(n string) bool {
	if n == "" || len(n) > maxCounterLen || (n[0] == '0' && len(n) > 1) {
		return false
	}
	for i := 0; i < len(n); i++ {
		if n[i] < '0' || n[i] > '9' {
			return false
		}
	}
	return true
}

// LeadingZeros returns the number of leading zero bits of
// SHA-256(challenge ":" n), at most 32 (all a challenge can ask). Inputs
// longer than a solution can be count as 0.
func LeadingZeros(challenge, n string) int {
	if len(challenge)+1+len(n) > MaxSolutionLen {
		return 0
	}
	var in [MaxSolutionLen]byte
	m := copy(in[:], challenge)
	in[m] = ':'
	m++
	m += copy(in[m:], n)
	sum := sha256.Sum256(in[:m])
	return bits.LeadingZeros32(binary.BigEndian.Uint32(sum[:4]))
}

// SplitSolution splits a cookie or header value challenge.n at its last
// '.'; ok is false when there is none or the value is longer than
// MaxSolutionLen.
func SplitSolution(s string) (challenge, n string, ok bool) {
	i := strings.LastIndexByte(s, '.')
	if i < 0 || len(s) > MaxSolutionLen {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// The kinds of tag.
const (
	tagRoom   = 'r'
	tagClient = 'c'
)

// tag is the first 4 bytes of HMAC-SHA256(k, kind || data), data at most
// maxRoomLen bytes. The input is built on the stack, so a tag costs no
// allocation.
func tag[T string | []byte](k *macKey, kind byte, data T) uint32 {
	var in [sha256.BlockSize + 1 + maxRoomLen]byte
	m := copy(in[:], k.ipad[:])
	in[m] = kind
	m++
	m += copy(in[m:], data)
	inner := sha256.Sum256(in[:m])
	var out [sha256.BlockSize + sha256.Size]byte
	copy(out[:], k.opad[:])
	copy(out[sha256.BlockSize:], inner[:])
	sum := sha256.Sum256(out[:])
	return binary.BigEndian.Uint32(sum[:4])
}
