package token

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// DefaultLeeway is the clock skew Verify allows on "exp" and "nbf" when
// VerifierOptions.Leeway is zero.
const DefaultLeeway = 5 * time.Second

// MaxTokenLen is the longest token Verify reads; usher's tokens are about
// 400 bytes.
const MaxTokenLen = 4096

// The reasons a token is refused. Verify's errors wrap one of them (test
// with errors.Is) and say more; Reason names them for JSON answers.
var (
	ErrMalformed   = errors.New("malformed")
	ErrAlgorithm   = errors.New("algorithm not allowed")
	ErrUnknownKey  = errors.New("unknown key")
	ErrSignature   = errors.New("bad signature")
	ErrIssuer      = errors.New("wrong issuer")
	ErrAudience    = errors.New("wrong audience")
	ErrExpired     = errors.New("expired")
	ErrNotYetValid = errors.New("not yet valid")
)

// reasons maps each refusal to its short name, in the order Verify checks.
var reasons = []struct {
	err  error
	name string
}{
	{ErrMalformed, "malformed"},
	{ErrAlgorithm, "algorithm_not_allowed"},
	{ErrUnknownKey, "unknown_key"},
	{ErrSignature, "bad_signature"},
	{ErrIssuer, "wrong_issuer"},
	{ErrAudience, "wrong_audience"},
	{ErrExpired, "expired"},
	{ErrNotYetValid, "not_yet_valid"},
}

// Reason returns the short name of the refusal err wraps ("expired",
// "wrong_audience", "bad_signature", ...), "" for nil and "invalid" for an
// error that wraps none of them.
func Reason(err error) string {
	if err == nil {
		return ""
	}
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	return "invalid"
}

// algorithms is the only list of algorithms Verify accepts.
var algorithms = []jose.SignatureAlgorithm{jose.EdDSA}

// VerifierOptions tune a Verifier.
type VerifierOptions struct {
	// Issuer is the "iss" a token must carry; empty means DefaultIssuer.
	Issuer string
	// Leeway is the clock skew allowed on "exp" and "nbf"; zero means
	// DefaultLeeway, negative means none.
	Leeway time.Duration
}

// Verifier checks admission tokens against a set of public keys. It is
// immutable and safe for concurrent use.
type Verifier struct {
	keys   map[string]ed25519.PublicKey
	issuer string
	leeway time.Duration
}

// NewVerifier returns a Verifier that accepts tokens signed by any of
// keys. It reports every key without an id or of the wrong size, and
// repeated ids.
func NewVerifier(keys []PublicKey, opts VerifierOptions) (*Verifier, error) {
	if len(keys) == 0 {
		return nil, errors.New("token verifier: no public keys")
	}
	v := &Verifier{keys: make(map[string]ed25519.PublicKey, len(keys)), issuer: opts.Issuer, leeway: opts.Leeway}
	if v.issuer == "" {
		v.issuer = DefaultIssuer
	}
	switch {
	case v.leeway == 0:
		v.leeway = DefaultLeeway
	case v.leeway < 0:
		v.leeway = 0
	}
	var errs []error
	for _, k := range keys {
		if err := checkKeyID(k.ID); err != nil {
			errs = append(errs, fmt.Errorf("public key %q: %w", k.ID, err))
			continue
		}
		if len(k.Key) != ed25519.PublicKeySize {
			errs = append(errs, fmt.Errorf("public key %q: must be %d bytes, got %d", k.ID, ed25519.PublicKeySize, len(k.Key)))
			continue
		}
		if _, dup := v.keys[k.ID]; dup {
			errs = append(errs, fmt.Errorf("public key %q: id is used by more than one key", k.ID))
			continue
		}
		v.keys[k.ID] = k.Key
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("token verifier: %w", errors.Join(errs...))
	}
	return v, nil
}

// Verify checks a token for room at time now and returns its claims. It
// accepts EdDSA (Ed25519) signatures only, by a key it knows by the
// header's "kid"; then the issuer, the audience (room), "exp" and "nbf"
// (each with the leeway). The error wraps the reason (ErrExpired,
// ErrAudience, ...) and says what failed.
func (v *Verifier) Verify(token, room string, now time.Time) (Claims, error) {
	if token == "" {
		return Claims{}, fmt.Errorf("admission token %w: empty", ErrMalformed)
	}
	if len(token) > MaxTokenLen {
		return Claims{}, fmt.Errorf("admission token %w: %d bytes, at most %d", ErrMalformed, len(token), MaxTokenLen)
	}
	if err := checkCompact(token); err != nil {
		return Claims{}, err
	}
	jws, err := jose.ParseSignedCompact(token, algorithms)
	if err != nil {
		return Claims{}, parseError(token, err)
	}
	if len(jws.Signatures) != 1 {
		return Claims{}, fmt.Errorf("admission token %w: %d signatures, want 1", ErrMalformed, len(jws.Signatures))
	}
	h := jws.Signatures[0].Header
	if h.Algorithm != Algorithm {
		return Claims{}, fmt.Errorf("admission token: %w: %q, only %s", ErrAlgorithm, h.Algorithm, Algorithm)
	}
	key, ok := v.keys[h.KeyID]
	if !ok {
		return Claims{}, fmt.Errorf("admission token: %w %q", ErrUnknownKey, h.KeyID)
	}
	payload, err := jws.Verify(key)
	if err != nil {
		return Claims{}, fmt.Errorf("admission token: %w (key %q)", ErrSignature, h.KeyID)
	}
	var p parsedClaims
	if err := json.Unmarshal(payload, &p); err != nil {
		return Claims{}, fmt.Errorf("admission token %w: claims: %v", ErrMalformed, err)
	}
	c, err := p.claims()
	if err != nil {
		return Claims{}, fmt.Errorf("admission token %w: %v", ErrMalformed, err)
	}
	c.KeyID = h.KeyID
	if c.Issuer != v.issuer {
		return Claims{}, fmt.Errorf("admission token: %w: %q, want %q", ErrIssuer, c.Issuer, v.issuer)
	}
	if c.Room != room {
		return Claims{}, fmt.Errorf("admission token: %w: for room %q, not %q", ErrAudience, c.Room, room)
	}
	if !now.Before(c.Expiry.Add(v.leeway)) {
		return Claims{}, fmt.Errorf("admission token %w at %s (%s ago)", ErrExpired,
			c.Expiry.Format(time.RFC3339), now.Sub(c.Expiry).Truncate(time.Second))
	}
	if !c.NotBefore.IsZero() && now.Add(v.leeway).Before(c.NotBefore) {
		return Claims{}, fmt.Errorf("admission token %w: valid from %s (in %s)", ErrNotYetValid,
			c.NotBefore.Format(time.RFC3339), c.NotBefore.Sub(now).Truncate(time.Second))
	}
	return c, nil
}

// checkCompact checks that token is three parts of canonical unpadded
// base64url joined by dots, before go-jose reads it: go-jose would also
// accept a last character with unused bits set, which gives one token
// several spellings.
func checkCompact(token string) error {
	start, dots := 0, 0
	for i := 0; i <= len(token); i++ {
		if i < len(token) && token[i] != '.' {
			if b64Value(token[i]) < 0 {
				return fmt.Errorf("admission token %w: byte %d is %q, not base64url", ErrMalformed, i, token[i])
			}
			continue
		}
		if !canonical(token[start:i]) {
			return fmt.Errorf("admission token %w: part %d is not canonical unpadded base64url", ErrMalformed, dots+1)
		}
		if i < len(token) {
			dots++
		}
		start = i + 1
	}
	if dots != 2 {
		return fmt.Errorf("admission token %w: %d parts, want 3 (header.payload.signature)", ErrMalformed, dots+1)
	}
	return nil
}

// b64Value returns the value of a base64url character, or -1.
func b64Value(c byte) int {
	switch {
	case 'A' <= c && c <= 'Z':
		return int(c - 'A')
	case 'a' <= c && c <= 'z':
		return int(c-'a') + 26
	case '0' <= c && c <= '9':
		return int(c-'0') + 52
	case c == '-':
		return 62
	case c == '_':
		return 63
	}
	return -1
}

// canonical reports whether the base64url part has a valid length and no
// unused bits set in its last character.
func canonical(part string) bool {
	if len(part) == 0 {
		return true
	}
	last := b64Value(part[len(part)-1])
	switch len(part) % 4 {
	case 1:
		return false
	case 2:
		return last&0x0f == 0
	case 3:
		return last&0x03 == 0
	}
	return true
}

// parseError explains why go-jose did not parse token: a header that asks
// for another algorithm is ErrAlgorithm, anything else ErrMalformed.
func parseError(token string, err error) error {
	if head, _, ok := strings.Cut(token, "."); ok {
		if b, derr := base64.RawURLEncoding.DecodeString(head); derr == nil {
			var h struct {
				Alg *string `json:"alg"`
			}
			if json.Unmarshal(b, &h) == nil && h.Alg != nil && *h.Alg != Algorithm {
				return fmt.Errorf("admission token: %w: %q, only %s", ErrAlgorithm, *h.Alg, Algorithm)
			}
		}
	}
	return fmt.Errorf("admission token %w: %v", ErrMalformed, err)
}
