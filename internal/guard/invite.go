package guard

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/usherhq/usher"
)

// An invite link carries a signed invite: the room, a random id, how many
// times it may be used, until when, and what it gives (InviteAdmit: in at
// once, counted; InviteFront: a place at the front of the line). The store
// counts its uses (usher.Store.UseInvite), so a link is good for its uses
// however many copies of it exist. Invites are signed with a key derived
// from the ticket ring, so every node verifies them and a rotated-out key
// still verifies its links while it is in the ring.
//
// The text is payload "." mac in unpadded URL-safe base64: payload =
// version (1), key id length and key id, room length and room, id (16),
// uses (uvarint), expiry (uvarint unix seconds), mode (1); mac = the first
// 16 bytes of HMAC-SHA256 over the payload.

// Invite is a verified invite.
type Invite struct {
	Room    string
	ID      [16]byte
	Uses    int
	Expires time.Time
	Mode    usher.InviteMode
}

// The errors of OpenInvite; each wraps ErrBadInvite.
var (
	ErrBadInvite     = errors.New("invite: not valid")
	errInviteFormat  = fmt.Errorf("%w: malformed", ErrBadInvite)
	errInviteKey     = fmt.Errorf("%w: unknown key", ErrBadInvite)
	errInviteMAC     = fmt.Errorf("%w: signature does not match", ErrBadInvite)
	ErrInviteExpired = fmt.Errorf("%w: expired", ErrBadInvite)
)

const (
	inviteVersion = 1
	// MaxInviteUses bounds an invite's uses.
	MaxInviteUses = 1_000_000
	maxInviteLen  = 512
	inviteMACSize = 16
)

var inviteInfo = []byte("usher invite v1")

// Invites signs and opens invite links under a key ring. It is immutable
// and safe for concurrent use.
type Invites struct {
	keys []inviteKey
}

type inviteKey struct {
	id  string
	key []byte
}

// NewInvites returns an Invites over the keys (the ticket ring): keys[0]
// signs, every key verifies.
func NewInvites(keys []usher.Key) (*Invites, error) {
	if len(keys) == 0 {
		return nil, errors.New("invites: no keys")
	}
	iv := &Invites{}
	for _, k := range keys {
		if !validKeyID(k.ID) || len(k.Secret) < 16 {
			return nil, fmt.Errorf("invites: key %q: bad id or secret", k.ID)
		}
		mk, err := hkdf.Key(sha256.New, k.Secret, nil, string(inviteInfo), sha256.Size)
		if err != nil {
			return nil, err
		}
		iv.keys = append(iv.keys, inviteKey{id: k.ID, key: mk})
	}
	return iv, nil
}

// New returns a new invite's text for room: uses from 1 to MaxInviteUses,
// expires after now, mode InviteAdmit or InviteFront.
func (iv *Invites) New(room string, uses int, expires time.Time, mode usher.InviteMode, now time.Time) (string, Invite, error) {
	switch {
	case room == "" || len(room) > 255:
		return "", Invite{}, fmt.Errorf("invite: room id must be 1-255 bytes")
	case uses < 1 || uses > MaxInviteUses:
		return "", Invite{}, fmt.Errorf("invite: uses must be from 1 to %d, got %d", MaxInviteUses, uses)
	case !expires.After(now):
		return "", Invite{}, fmt.Errorf("invite: expiry %v is not after now", expires.UTC().Format(time.RFC3339))
	case mode != usher.InviteAdmit && mode != usher.InviteFront:
		return "", Invite{}, fmt.Errorf("invite: mode must be admit or front")
	}
	inv := Invite{Room: room, Uses: uses, Expires: time.Unix(expires.Unix(), 0).UTC(), Mode: mode}
	_, _ = rand.Read(inv.ID[:])
	k := &iv.keys[0]
	p := []byte{inviteVersion, byte(len(k.id))}
	p = append(p, k.id...)
	p = append(p, byte(len(room)))
	p = append(p, room...)
	p = append(p, inv.ID[:]...)
	p = binary.AppendUvarint(p, uint64(uses))
	p = binary.AppendUvarint(p, uint64(inv.Expires.Unix()))
	p = append(p, byte(mode))
	mac := macOf(k.key, p)
	return b64.EncodeToString(p) + "." + b64.EncodeToString(mac), inv, nil
}

// Open verifies an invite's text at now and returns the invite. It never
// panics; every error wraps ErrBadInvite.
func (iv *Invites) Open(text string, now time.Time) (Invite, error) {
	if len(text) > maxInviteLen {
		return Invite{}, errInviteFormat
	}
	pt, mt, ok := strings.Cut(text, ".")
	if !ok {
		return Invite{}, errInviteFormat
	}
	p, err1 := b64.DecodeString(pt)
	mac, err2 := b64.DecodeString(mt)
	if err1 != nil || err2 != nil || len(mac) != inviteMACSize || len(p) < 2 || p[0] != inviteVersion {
		return Invite{}, errInviteFormat
	}
	idLen := int(p[1])
	if len(p) < 2+idLen+1 {
		return Invite{}, errInviteFormat
	}
	var k *inviteKey
	for i := range iv.keys {
		if iv.keys[i].id == string(p[2:2+idLen]) {
			k = &iv.keys[i]
		}
	}
	if k == nil {
		return Invite{}, errInviteKey
	}
	if !hmac.Equal(macOf(k.key, p), mac) {
		return Invite{}, errInviteMAC
	}
	r := bytes.NewReader(p[2+idLen:])
	var inv Invite
	roomLen, err := r.ReadByte()
	if err != nil || roomLen == 0 || int(roomLen) > r.Len() {
		return Invite{}, errInviteFormat
	}
	room := make([]byte, roomLen)
	_, _ = r.Read(room)
	inv.Room = string(room)
	if n, _ := r.Read(inv.ID[:]); n != len(inv.ID) {
		return Invite{}, errInviteFormat
	}
	uses, err := binary.ReadUvarint(r)
	if err != nil || uses < 1 || uses > MaxInviteUses {
		return Invite{}, errInviteFormat
	}
	exp, err := binary.ReadUvarint(r)
	if err != nil || exp > maxUnix {
		return Invite{}, errInviteFormat
	}
	mode, err := r.ReadByte()
	if err != nil || r.Len() != 0 || (usher.InviteMode(mode) != usher.InviteAdmit && usher.InviteMode(mode) != usher.InviteFront) {
		return Invite{}, errInviteFormat
	}
	inv.Uses, inv.Expires, inv.Mode = int(uses), time.Unix(int64(exp), 0).UTC(), usher.InviteMode(mode)
	if !now.Before(inv.Expires) {
		return Invite{}, ErrInviteExpired
	}
	return inv, nil
}

func macOf(key, p []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(p)
	return m.Sum(nil)[:inviteMACSize]
}
