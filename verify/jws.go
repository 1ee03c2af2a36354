package verify

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// maxTokenLen is the longest token read; usher's are about 400 bytes.
const maxTokenLen = 4096

// algorithm is the only JWS algorithm accepted.
const algorithm = "EdDSA"

// The reasons a token is refused. The errors of Verify and VerifyContext
// wrap one of them (test with errors.Is) and say more.
var (
	// ErrMissing: the request carries no token.
	ErrMissing = errors.New("missing token")
	// ErrMalformed: the token is not a JWS compact serialization of a
	// JSON object with the required claims (aud, exp).
	ErrMalformed = errors.New("malformed")
	// ErrAlgorithm: the header asks for an algorithm other than EdDSA
	// ("none", HS256, ...).
	ErrAlgorithm = errors.New("algorithm not allowed")
	// ErrUnknownKey: the header's kid is not in usher's key set.
	ErrUnknownKey = errors.New("unknown key")
	// ErrSignature: the signature does not verify.
	ErrSignature = errors.New("bad signature")
	// ErrIssuer: the iss claim is not Options.Issuer.
	ErrIssuer = errors.New("wrong issuer")
	// ErrAudience: the token is for another room.
	ErrAudience = errors.New("wrong audience")
	// ErrExpired: the token's exp has passed.
	ErrExpired = errors.New("expired")
	// ErrNotYetValid: the token's nbf is still to come.
	ErrNotYetValid = errors.New("not yet valid")
	// ErrKeysUnavailable: usher's key set could not be fetched, and no
	// earlier copy is held. The token may be fine.
	ErrKeysUnavailable = errors.New("keys unavailable")
)

// reasons names each refusal in JSON answers, as usher's verify endpoint
// does.
var reasons = []struct {
	err  error
	name string
}{
	{ErrMissing, "missing_token"},
	{ErrMalformed, "malformed"},
	{ErrAlgorithm, "algorithm_not_allowed"},
	{ErrUnknownKey, "unknown_key"},
	{ErrSignature, "bad_signature"},
	{ErrIssuer, "wrong_issuer"},
	{ErrAudience, "wrong_audience"},
	{ErrExpired, "expired"},
	{ErrNotYetValid, "not_yet_valid"},
	{ErrKeysUnavailable, "keys_unavailable"},
}

func reason(err error) string {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	return "invalid"
}

// Claims are what a valid admission token says.
type Claims struct {
	// Room is the room the visitor was admitted to (the "aud" claim; the
	// Verifier's room).
	Room string
	// Subject is the visitor's id, 16 hex digits ("sub"), the same for
	// every token of one visitor in one room.
	Subject string
	// Issuer is the "iss" claim: "usher", or usher's public URL.
	Issuer string
	// IssuedAt, NotBefore and Expiry are "iat", "nbf" and "exp" (zero when
	// absent; exp never is).
	IssuedAt, NotBefore, Expiry time.Time
	// AdmittedAt is when the visitor was admitted ("admitted_at").
	AdmittedAt time.Time
	// QueuePosition is the visitor's place in line last told before
	// admission ("queue_position"); 0 when admitted without waiting.
	QueuePosition int64
	// Waited is how long the visitor waited ("waited_s").
	Waited time.Duration
	// KeyID is the id of usher's key that signed the token ("kid").
	KeyID string
}

// token is a parsed, not yet verified, compact JWS.
type token struct {
	kid     string
	signed  string // header.payload, what the signature covers
	payload []byte
	sig     []byte
}

var b64 = base64.RawURLEncoding.Strict()

// parseToken splits and decodes a compact JWS and checks its header:
// exactly three parts of unpadded base64url, a JSON object header with alg
// "EdDSA" and no crit. It does not check the signature.
func parseToken(s string) (token, error) {
	if s == "" {
		return token{}, fmt.Errorf("admission token %w: empty", ErrMalformed)
	}
	if len(s) > maxTokenLen {
		return token{}, fmt.Errorf("admission token %w: %d bytes, at most %d", ErrMalformed, len(s), maxTokenLen)
	}
	dots := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.':
			dots++
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return token{}, fmt.Errorf("admission token %w: byte %d is %q, not base64url", ErrMalformed, i, c)
		}
	}
	if dots != 2 {
		return token{}, fmt.Errorf("admission token %w: %d parts, want 3 (header.payload.signature)", ErrMalformed, dots+1)
	}
	h64, rest, _ := strings.Cut(s, ".")
	p64, s64, _ := strings.Cut(rest, ".")
	hb, err := b64.DecodeString(h64)
	if err != nil {
		return token{}, fmt.Errorf("admission token %w: header: %v", ErrMalformed, err)
	}
	h, err := object(hb)
	if err != nil {
		return token{}, fmt.Errorf("admission token %w: header: %v", ErrMalformed, err)
	}
	alg, err := str(h, "alg")
	if err != nil {
		return token{}, err
	}
	if alg == nil || *alg != algorithm {
		name := "none given"
		if alg != nil {
			name = fmt.Sprintf("%q", *alg)
		}
		return token{}, fmt.Errorf("admission token: %w: %s, only %s", ErrAlgorithm, name, algorithm)
	}
	if _, ok := h["crit"]; ok {
		return token{}, fmt.Errorf("admission token %w: critical header extensions are not supported", ErrMalformed)
	}
	kid, err := str(h, "kid")
	if err != nil {
		return token{}, err
	}
	if kid == nil {
		kid = new(string)
	}
	pb, err := b64.DecodeString(p64)
	if err != nil {
		return token{}, fmt.Errorf("admission token %w: payload: %v", ErrMalformed, err)
	}
	sig, err := b64.DecodeString(s64)
	if err != nil {
		return token{}, fmt.Errorf("admission token %w: signature: %v", ErrMalformed, err)
	}
	return token{kid: *kid, signed: s[:len(h64)+1+len(p64)], payload: pb, sig: sig}, nil
}

// verifySignature reports whether t's signature is key's.
func (t *token) verifySignature(key ed25519.PublicKey) error {
	if len(t.sig) != ed25519.SignatureSize || !ed25519.Verify(key, []byte(t.signed), t.sig) {
		return fmt.Errorf("admission token: %w (key %q)", ErrSignature, t.kid)
	}
	return nil
}

// check reads the verified payload and checks it: issuer (when iss is
// not empty), audience room, exp and nbf at now with leeway.
func (t *token) check(iss, room string, now time.Time, leeway time.Duration) (Claims, error) {
	m, err := object(t.payload)
	if err != nil {
		return Claims{}, fmt.Errorf("admission token %w: claims: %v", ErrMalformed, err)
	}
	c := Claims{KeyID: t.kid}
	exp, err := num(m, "exp")
	if err != nil {
		return Claims{}, err
	}
	if exp == nil {
		return Claims{}, fmt.Errorf("admission token %w: no exp claim", ErrMalformed)
	}
	if c.Expiry, err = numericDate(exp, "exp"); err != nil {
		return Claims{}, err
	}
	for _, d := range []struct {
		name string
		t    *time.Time
	}{{"iat", &c.IssuedAt}, {"nbf", &c.NotBefore}, {"admitted_at", &c.AdmittedAt}} {
		f, err := num(m, d.name)
		if err != nil {
			return Claims{}, err
		}
		if *d.t, err = numericDate(f, d.name); err != nil {
			return Claims{}, err
		}
	}
	if f, err := num(m, "queue_position"); err != nil {
		return Claims{}, err
	} else if f != nil {
		if !isInt(*f) {
			return Claims{}, fmt.Errorf("admission token %w: queue_position is not an integer", ErrMalformed)
		}
		c.QueuePosition = int64(*f)
	}
	if f, err := num(m, "waited_s"); err != nil {
		return Claims{}, err
	} else if f != nil {
		if !isInt(*f) || *f < 0 || *f > math.MaxInt64/float64(time.Second) {
			return Claims{}, fmt.Errorf("admission token %w: waited_s is not a whole number of seconds", ErrMalformed)
		}
		c.Waited = time.Duration(*f) * time.Second
	}
	sub, err := str(m, "sub")
	if err != nil {
		return Claims{}, err
	}
	if sub != nil {
		c.Subject = *sub
	}
	p, err := str(m, "iss")
	if err != nil {
		return Claims{}, err
	}
	if p != nil {
		c.Issuer = *p
	}
	if iss != "" && (p == nil || *p != iss) {
		return Claims{}, fmt.Errorf("admission token: %w: %q, want %q", ErrIssuer, c.Issuer, iss)
	}
	auds, err := audiences(m["aud"])
	if err != nil {
		return Claims{}, err
	}
	for _, a := range auds {
		if a == room {
			c.Room = room
		}
	}
	if c.Room == "" {
		return Claims{}, fmt.Errorf("admission token: %w: for room %q, not %q", ErrAudience, strings.Join(auds, `", "`), room)
	}
	if !now.Before(c.Expiry.Add(leeway)) {
		return Claims{}, fmt.Errorf("admission token %w at %s (%s ago)", ErrExpired,
			c.Expiry.Format(time.RFC3339), now.Sub(c.Expiry).Truncate(time.Second))
	}
	if !c.NotBefore.IsZero() && now.Add(leeway).Before(c.NotBefore) {
		return Claims{}, fmt.Errorf("admission token %w: valid from %s (in %s)", ErrNotYetValid,
			c.NotBefore.Format(time.RFC3339), c.NotBefore.Sub(now).Truncate(time.Second))
	}
	return c, nil
}

// maxDate bounds NumericDates (seconds) to what time.Time and float64
// hold exactly.
const maxDate = 1 << 53

// numericDate converts a JWT NumericDate (seconds since the epoch, maybe
// fractional) to a time; nil is the zero time.
func numericDate(f *float64, name string) (time.Time, error) {
	if f == nil {
		return time.Time{}, nil
	}
	if *f > maxDate || *f < -maxDate {
		return time.Time{}, fmt.Errorf("admission token %w: %s is out of range", ErrMalformed, name)
	}
	sec, frac := math.Modf(*f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
}

func isInt(f float64) bool {
	return f == math.Trunc(f) && f <= maxDate && f >= -maxDate
}

// audiences reads "aud": a string or an array of strings (RFC 7519,
// section 4.1.3).
func audiences(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, fmt.Errorf("admission token %w: no aud claim", ErrMalformed)
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil || len(many) == 0 {
		return nil, fmt.Errorf("admission token %w: aud is neither a string nor an array of strings", ErrMalformed)
	}
	return many, nil
}

// object decodes b, which must be one JSON object and nothing else, into
// its members. Member names match exactly (encoding/json would match
// struct fields regardless of case); of repeated names the last counts.
func object(b []byte) (map[string]json.RawMessage, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return m, nil
}

// str returns the member name of m as a string, nil when absent or null.
func str(m map[string]json.RawMessage, name string) (*string, error) {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("admission token %w: %s is not a string", ErrMalformed, name)
	}
	return &s, nil
}

// num returns the member name of m as a number, nil when absent or null.
func num(m map[string]json.RawMessage, name string) (*float64, error) {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("admission token %w: %s is not a number", ErrMalformed, name)
	}
	return &f, nil
}
