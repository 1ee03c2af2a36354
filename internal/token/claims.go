package token

import (
	"encoding/hex"
	"errors"
	"time"
)

// Claims are what an admission token says about a visitor. Times travel as
// whole seconds (JWT NumericDate), so Sign truncates them and Verify
// returns them at second precision.
type Claims struct {
	// Room is the room's id, the token's audience ("aud").
	Room string
	// VisitorID is the visitor's id from the ticket ("sub", as 16 hex
	// digits).
	VisitorID [8]byte
	// IssuedAt is when the token was signed ("iat"). Sign requires it.
	IssuedAt time.Time
	// NotBefore is when the token becomes valid ("nbf"). Sign: zero means
	// IssuedAt.
	NotBefore time.Time
	// Expiry is when the token stops being valid ("exp"). Sign: the end
	// of the visitor's session; the token expires then or after the
	// Signer's TTL, whichever comes first. Zero means after the TTL.
	Expiry time.Time
	// AdmittedAt is when the visitor was admitted ("admitted_at"); zero
	// leaves the claim out.
	AdmittedAt time.Time
	// QueuePosition is the visitor's place in line (1 = next) as last
	// told before admission ("queue_position"); 0 for a visitor admitted
	// without waiting.
	QueuePosition int64
	// Waited is how long the visitor waited before admission
	// ("waited_s", whole seconds).
	Waited time.Duration
	// Issuer is the token's issuer ("iss"). Verify sets it; Sign uses the
	// Signer's issuer and ignores this field.
	Issuer string
	// KeyID is the id of the key that signed the token (the header's
	// "kid"). Verify sets it; Sign ignores it.
	KeyID string
}

// wireClaims is the JSON payload of a token.
type wireClaims struct {
	Issuer        string `json:"iss"`
	Audience      string `json:"aud"`
	Subject       string `json:"sub"`
	IssuedAt      int64  `json:"iat"`
	NotBefore     int64  `json:"nbf"`
	Expiry        int64  `json:"exp"`
	AdmittedAt    int64  `json:"admitted_at,omitempty"`
	QueuePosition int64  `json:"queue_position"`
	WaitedS       int64  `json:"waited_s"`
}

// parsedClaims is wireClaims as read back: required claims are pointers
// so that a missing one is told apart from zero.
type parsedClaims struct {
	Issuer        *string `json:"iss"`
	Audience      *string `json:"aud"`
	Subject       *string `json:"sub"`
	IssuedAt      *int64  `json:"iat"`
	NotBefore     *int64  `json:"nbf"`
	Expiry        *int64  `json:"exp"`
	AdmittedAt    int64   `json:"admitted_at"`
	QueuePosition int64   `json:"queue_position"`
	WaitedS       int64   `json:"waited_s"`
}

// claims converts p to Claims, reporting the first required claim that is
// missing or malformed.
func (p *parsedClaims) claims() (Claims, error) {
	switch {
	case p.Issuer == nil:
		return Claims{}, errors.New("no iss claim")
	case p.Audience == nil:
		return Claims{}, errors.New("no aud claim")
	case p.Subject == nil:
		return Claims{}, errors.New("no sub claim")
	case p.IssuedAt == nil:
		return Claims{}, errors.New("no iat claim")
	case p.Expiry == nil:
		return Claims{}, errors.New("no exp claim")
	}
	c := Claims{
		Room:          *p.Audience,
		IssuedAt:      time.Unix(*p.IssuedAt, 0).UTC(),
		Expiry:        time.Unix(*p.Expiry, 0).UTC(),
		QueuePosition: p.QueuePosition,
		Waited:        time.Duration(p.WaitedS) * time.Second,
		Issuer:        *p.Issuer,
	}
	if p.NotBefore != nil {
		c.NotBefore = time.Unix(*p.NotBefore, 0).UTC()
	}
	if p.AdmittedAt != 0 {
		c.AdmittedAt = time.Unix(p.AdmittedAt, 0).UTC()
	}
	id, ok := parseSubject(*p.Subject)
	if !ok {
		return Claims{}, errors.New("sub claim is not 16 hex digits")
	}
	c.VisitorID = id
	return c, nil
}

// Subject returns the visitor id as the "sub" claim writes it: 16
// lowercase hex digits.
func (c Claims) Subject() string {
	return hex.EncodeToString(c.VisitorID[:])
}

func parseSubject(s string) ([8]byte, bool) {
	var id [8]byte
	if len(s) != 2*len(id) {
		return id, false
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, false
	}
	return id, true
}
