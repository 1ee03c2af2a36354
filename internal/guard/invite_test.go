package guard

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

func TestInvites(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	k1 := usher.Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}
	k2 := usher.Key{ID: "k2", Secret: []byte("fedcba9876543210fedcba9876543210")}
	iv, err := NewInvites([]usher.Key{k1})
	if err != nil {
		t.Fatal(err)
	}
	text, made, err := iv.New("sale", 3, now.Add(time.Hour), usher.InviteFront, now)
	if err != nil {
		t.Fatal(err)
	}
	got, err := iv.Open(text, now.Add(time.Minute))
	if err != nil || got != made || got.Uses != 3 || got.Mode != usher.InviteFront || got.Room != "sale" {
		t.Fatalf("Open = %+v, %v; want %+v", got, err, made)
	}
	// Rotation: a ring with a new first key still opens it.
	rotated, _ := NewInvites([]usher.Key{k2, k1})
	if _, err := rotated.Open(text, now); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	other, _ := NewInvites([]usher.Key{k2})
	if _, err := other.Open(text, now); !errors.Is(err, ErrBadInvite) {
		t.Fatalf("another ring: %v", err)
	}
	if _, err := iv.Open(text, now.Add(time.Hour)); !errors.Is(err, ErrInviteExpired) {
		t.Fatalf("at its expiry: %v", err)
	}
	dot := strings.IndexByte(text, '.')
	for name, bad := range map[string]string{
		"empty": "", "no dot": strings.Replace(text, ".", "", 1), "payload flipped": flip(text, 3),
		"mac flipped": flip(text, dot+2), "truncated": text[:len(text)-2], "huge": strings.Repeat("A", 10000),
		"more uses": text[:dot-4] + "AAAA" + text[dot:],
	} {
		if _, err := iv.Open(bad, now); !errors.Is(err, ErrBadInvite) {
			t.Errorf("%s: %v, want refused", name, err)
		}
	}
	for name, f := range map[string]func() error{
		"no uses":     func() error { _, _, err := iv.New("sale", 0, now.Add(time.Hour), usher.InviteAdmit, now); return err },
		"past expiry": func() error { _, _, err := iv.New("sale", 1, now, usher.InviteAdmit, now); return err },
		"no mode":     func() error { _, _, err := iv.New("sale", 1, now.Add(time.Hour), 0, now); return err },
		"no room":     func() error { _, _, err := iv.New("", 1, now.Add(time.Hour), usher.InviteAdmit, now); return err },
		"too many uses": func() error {
			_, _, err := iv.New("sale", MaxInviteUses+1, now.Add(time.Hour), usher.InviteAdmit, now)
			return err
		},
	} {
		if f() == nil {
			t.Errorf("%s: made", name)
		}
	}
}

// flip changes the character at i to another of the alphabet.
func flip(s string, i int) string {
	c := byte('A')
	if s[i] == 'A' {
		c = 'B'
	}
	return s[:i] + string(c) + s[i+1:]
}

func TestNotes(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	k1 := usher.Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}
	n, _ := NewNotes([]usher.Key{k1}, "page")
	other, _ := NewNotes([]usher.Key{k1}, "other")
	text := n.Sign([]byte(`{"a":1}`), now.Add(time.Minute))
	if got, err := n.Open(text, now); err != nil || string(got) != `{"a":1}` {
		t.Fatalf("Open = %q, %v", got, err)
	}
	for name, f := range map[string]func() error{
		"expired":       func() error { _, err := n.Open(text, now.Add(time.Minute)); return err },
		"another label": func() error { _, err := other.Open(text, now); return err },
		"flipped":       func() error { _, err := n.Open(flip(text, 5), now); return err },
		"garbage":       func() error { _, err := n.Open("x.y", now); return err },
	} {
		if err := f(); !errors.Is(err, ErrBadNote) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
