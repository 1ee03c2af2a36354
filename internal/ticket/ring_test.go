package ticket

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/usherhq/usher"
)

func TestNewRing(t *testing.T) {
	k1, k2 := testKey("k1"), testKey("k2")
	for _, tc := range []struct {
		name string
		keys []usher.Key
		want []string // each a line of the error; none for success
	}{
		{name: "one key", keys: []usher.Key{k1}},
		{name: "two keys", keys: []usher.Key{k1, k2}},
		{name: "id of 16 allowed characters", keys: []usher.Key{{ID: "Az09_-Az09_-Az09", Secret: k1.Secret}}},
		{name: "no keys", want: []string{"key ring is empty: at least one key is needed"}},
		{name: "empty id", keys: []usher.Key{k1, {Secret: k2.Secret}}, want: []string{"key 2 of 2: id is empty"}},
		{name: "id too long", keys: []usher.Key{{ID: "k12345678901234567", Secret: k1.Secret}},
			want: []string{`key "k12345678901234567": id must be at most 16 characters, got 18`}},
		{name: "id with a dot", keys: []usher.Key{{ID: "k.1", Secret: k1.Secret}},
			want: []string{`key "k.1": id may hold only A-Z, a-z, 0-9, '_' and '-'`}},
		{name: "id with a non-ASCII letter", keys: []usher.Key{{ID: "clé", Secret: k1.Secret}},
			want: []string{`key "clé": id may hold only A-Z, a-z, 0-9, '_' and '-'`}},
		{name: "short secret", keys: []usher.Key{{ID: "k1", Secret: make([]byte, 12)}},
			want: []string{`key "k1": secret must be 32 bytes, got 12`}},
		{name: "no secret", keys: []usher.Key{{ID: "k1"}},
			want: []string{`key "k1": secret must be 32 bytes, got 0`}},
		{name: "long secret", keys: []usher.Key{{ID: "k1", Secret: make([]byte, 64)}},
			want: []string{`key "k1": secret must be 32 bytes, got 64`}},
		{name: "repeated id", keys: []usher.Key{k1, {ID: "k1", Secret: k2.Secret}},
			want: []string{`key "k1": id is used by more than one key`}},
		{name: "repeated secret", keys: []usher.Key{k1, {ID: "k2", Secret: k1.Secret}},
			want: []string{`key "k2": same secret as key "k1"`}},
		{name: "every problem", keys: []usher.Key{{ID: "a b", Secret: k1.Secret}, {ID: "k1", Secret: []byte("short")}, k2, {ID: "k2", Secret: k1.Secret}},
			want: []string{
				`key "a b": id may hold only A-Z, a-z, 0-9, '_' and '-'`,
				`key "k1": secret must be 32 bytes, got 5`,
				`key "k2": id is used by more than one key`,
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRing(tc.keys)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("NewRing: %v", err)
				}
				if r.KeyID() != tc.keys[0].ID {
					t.Errorf("KeyID = %q, want %q", r.KeyID(), tc.keys[0].ID)
				}
				return
			}
			if err == nil {
				t.Fatal("NewRing succeeded")
			}
			if r != nil {
				t.Error("NewRing returned a ring with its error")
			}
			if got, want := err.Error(), strings.Join(tc.want, "\n"); got != want {
				t.Errorf("NewRing error:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestNewRingCopiesSecrets(t *testing.T) {
	k := testKey("k1")
	secret := bytes.Clone(k.Secret)
	r, err := NewRing([]usher.Key{{ID: "k1", Secret: secret}})
	if err != nil {
		t.Fatal(err)
	}
	in := fullTicket()
	v := MustSeal(t, r, &in)
	clear(secret)
	if _, err := MustRing(t, "k1").Open(v, testRoom, testCookie); err != nil {
		t.Fatalf("changing the caller's secret changed the ring: %v", err)
	}
}

func TestGenerateKey(t *testing.T) {
	a, err := GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := GenerateKey("k2")
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != "k1" || len(a.Secret) != SecretSize || len(b.Secret) != SecretSize {
		t.Fatalf("GenerateKey = %q with %d bytes, want k1 with %d", a.ID, len(a.Secret), SecretSize)
	}
	if bytes.Equal(a.Secret, b.Secret) {
		t.Error("two generated secrets are equal")
	}
	if _, err := NewRing([]usher.Key{a, b}); err != nil {
		t.Errorf("NewRing(generated keys): %v", err)
	}
	for _, id := range []string{"", "has space", strings.Repeat("x", 17)} {
		t.Run("bad id "+id, func(t *testing.T) {
			if k, err := GenerateKey(id); err == nil {
				t.Errorf("GenerateKey(%q) = %v, want an error", id, k)
			}
		})
	}
}

func TestSecretEncoding(t *testing.T) {
	secret := testKey("k1").Secret
	// Every byte value is in awk, so that the standard and URL alphabets differ.
	awk := make([]byte, SecretSize)
	for i := range awk {
		awk[i] = byte(0xfb + i*7)
	}
	if enc := EncodeSecret(secret); enc != base64.StdEncoding.EncodeToString(secret) {
		t.Errorf("EncodeSecret = %q, want standard padded base64", enc)
	}
	for _, tc := range []struct {
		name string
		in   string
		want []byte
	}{
		{"EncodeSecret", EncodeSecret(secret), secret},
		{"EncodeSecret with + and /", EncodeSecret(awk), awk},
		{"standard padded", base64.StdEncoding.EncodeToString(awk), awk},
		{"standard unpadded", base64.RawStdEncoding.EncodeToString(awk), awk},
		{"URL padded", base64.URLEncoding.EncodeToString(awk), awk},
		{"URL unpadded", base64.RawURLEncoding.EncodeToString(awk), awk},
		{"hex", hex.EncodeToString(awk), awk},
		{"upper-case hex", strings.ToUpper(hex.EncodeToString(awk)), awk},
		{"surrounded by spaces and a newline", "  " + EncodeSecret(awk) + "\n", awk},
		{"empty", "", nil},
		{"not base64", "this is not a secret at all!!", nil},
		{"too short", base64.StdEncoding.EncodeToString(awk[:31]), nil},
		{"too long", base64.StdEncoding.EncodeToString(append(awk, 0)), nil},
		{"hex too short", hex.EncodeToString(awk[:31]), nil},
		{"63 hex characters", hex.EncodeToString(awk)[:63], nil},
		{"line break inside", EncodeSecret(awk)[:20] + "\n" + EncodeSecret(awk)[20:], nil},
		{"mixed alphabets", base64.StdEncoding.EncodeToString(awk)[:20] + "-_" + base64.StdEncoding.EncodeToString(awk)[22:], nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeSecret(tc.in)
			if tc.want == nil {
				if err == nil {
					t.Errorf("DecodeSecret(%q) = %x, want an error", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeSecret(%q): %v", tc.in, err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("DecodeSecret(%q) = %x, want %x", tc.in, got, tc.want)
			}
		})
	}
}
