package guard

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

// fnv32 is the unkeyed tag of earlier releases: 32-bit FNV-1a.
func fnv32[T string | []byte](s T) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// challengeTags returns the room and client tags of a challenge.
func challengeTags(t *testing.T, challenge string) (room, client uint32) {
	t.Helper()
	enc, _, _ := strings.Cut(challenge, ".")
	payload, err := b64.DecodeString(enc)
	if err != nil {
		t.Fatal(err)
	}
	rest := payload[2+int(payload[1])+8+1+idSize:]
	return binary.BigEndian.Uint32(rest), binary.BigEndian.Uint32(rest[tagSize:])
}

// TestChallengeTagsKeyed: a challenge's tags are HMACs under the ring's
// key, not a public hash anyone can tabulate over every /24 to read which
// network a challenge was issued to; two rings tag the same client apart.
func TestChallengeTagsKeyed(t *testing.T) {
	var cl [maxClientLen]byte
	clientBytes := encodeClient(cl[:0], testClient)
	c := MustIssue(t, MustPoW(t, "k1"), 4)
	room, client := challengeTags(t, c.Value)
	if room == fnv32(testRoom) || client == fnv32(clientBytes) {
		t.Fatal("a challenge carries the public FNV-1a tags")
	}
	key, _ := hkdf.Key(sha256.New, testKey("k1").Secret, nil, hkdfInfo, sha256.Size)
	m := hmac.New(sha256.New, key)
	m.Write([]byte{tagClient})
	m.Write(clientBytes)
	if want := binary.BigEndian.Uint32(m.Sum(nil)); client != want {
		t.Fatalf("client tag %#x, want HMAC %#x", client, want)
	}
	_, other := challengeTags(t, MustIssue(t, MustPoW(t, "k2"), 4).Value)
	if other == client {
		t.Fatal("two keys give one client the same tag")
	}
}

// TestChallengeUnkeyedTagsVerify: a challenge issued before the tags were
// keyed (FNV-1a tags, under the same MAC) still verifies, and still names
// another room when used there.
func TestChallengeUnkeyedTagsVerify(t *testing.T) {
	p := MustPoW(t, "k1")
	var cl [maxClientLen]byte
	clientBytes := encodeClient(cl[:0], testClient)
	k := &p.keys[0]
	payload := append([]byte{formatVersion, byte(len(k.id))}, k.id...)
	payload = binary.BigEndian.AppendUint64(payload, uint64(t0.Unix()))
	payload = append(payload, 4)
	payload = append(payload, make([]byte, idSize)...)
	payload = binary.BigEndian.AppendUint32(payload, fnv32(testRoom))
	payload = binary.BigEndian.AppendUint32(payload, fnv32(clientBytes))
	mac := k.mac(payload, testRoom, clientBytes)
	challenge := b64.EncodeToString(payload) + "." + b64.EncodeToString(mac[:])
	n := MustSolve(t, challenge, 4)
	if _, err := p.Verify(challenge, n, testRoom, testClient, 4, t0.Add(time.Minute)); err != nil {
		t.Fatalf("an FNV-tagged challenge: %v", err)
	}
	if _, err := p.Verify(challenge, n, "other", testClient, 4, t0.Add(time.Minute)); err == nil {
		t.Fatal("an FNV-tagged challenge verifies in another room")
	}
}
