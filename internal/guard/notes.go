package guard

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/usherhq/usher"
)

// Notes signs short payloads that usher hands out and takes back, such as
// the page a forward-auth answer points a proxy at, so that nobody else can
// make one: payload "." mac in unpadded URL-safe base64, the payload being
// version (1), key id length and key id, expiry (uvarint unix seconds) and
// the data; the MAC the first 16 bytes of HMAC-SHA256 under a key derived
// (HKDF) from a ring key and the notes' label. Every key of the ring
// verifies; the first signs.
type Notes struct {
	keys []inviteKey
}

// ErrBadNote wraps every error of Notes.Open.
var ErrBadNote = errors.New("note: not valid")

// maxNoteLen bounds a note's text.
const maxNoteLen = 4096

// NewNotes returns Notes over the ring's keys for one use (label).
func NewNotes(keys []usher.Key, label string) (*Notes, error) {
	if len(keys) == 0 {
		return nil, errors.New("notes: no keys")
	}
	n := &Notes{}
	for _, k := range keys {
		if !validKeyID(k.ID) || len(k.Secret) < 16 {
			return nil, fmt.Errorf("notes: key %q: bad id or secret", k.ID)
		}
		mk, err := hkdf.Key(sha256.New, k.Secret, nil, "usher note v1 "+label, sha256.Size)
		if err != nil {
			return nil, err
		}
		n.keys = append(n.keys, inviteKey{id: k.ID, key: mk})
	}
	return n, nil
}

// Sign returns the text of data, valid until expires.
func (n *Notes) Sign(data []byte, expires time.Time) string {
	k := &n.keys[0]
	p := []byte{1, byte(len(k.id))}
	p = append(p, k.id...)
	p = binary.AppendUvarint(p, uint64(max(expires.Unix(), 0)))
	p = append(p, data...)
	return b64.EncodeToString(p) + "." + b64.EncodeToString(macOf(k.key, p))
}

// Open returns the data of a text Sign wrote, if it has not expired by now.
// It never panics.
func (n *Notes) Open(text string, now time.Time) ([]byte, error) {
	pt, mt, ok := strings.Cut(text, ".")
	if len(text) > maxNoteLen || !ok {
		return nil, fmt.Errorf("%w: malformed", ErrBadNote)
	}
	p, err1 := b64.DecodeString(pt)
	mac, err2 := b64.DecodeString(mt)
	if err1 != nil || err2 != nil || len(mac) != inviteMACSize || len(p) < 2 || p[0] != 1 || len(p) < 2+int(p[1]) {
		return nil, fmt.Errorf("%w: malformed", ErrBadNote)
	}
	id := string(p[2 : 2+int(p[1])])
	for i := range n.keys {
		k := &n.keys[i]
		if k.id != id {
			continue
		}
		if !hmac.Equal(macOf(k.key, p), mac) {
			return nil, fmt.Errorf("%w: signature does not match", ErrBadNote)
		}
		rest := p[2+int(p[1]):]
		exp, m := binary.Uvarint(rest)
		if m <= 0 {
			return nil, fmt.Errorf("%w: malformed", ErrBadNote)
		}
		if now.Unix() >= int64(exp) {
			return nil, fmt.Errorf("%w: expired", ErrBadNote)
		}
		return rest[m:], nil
	}
	return nil, fmt.Errorf("%w: unknown key", ErrBadNote)
}
