package token

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/usherhq/usher"
)

// DefaultTTL is how long a token is valid when Options.TTL is zero.
const DefaultTTL = 5 * time.Minute

// DefaultIssuer is the "iss" claim when Options.Issuer is empty.
const DefaultIssuer = "usher"

// Algorithm is the only JWS algorithm usher signs and accepts.
const Algorithm = "EdDSA"

// Options tune a Signer.
type Options struct {
	// Issuer is the "iss" claim; empty means DefaultIssuer. Give usher's
	// public URL when it is known.
	Issuer string
	// TTL is how long a token is valid after it is signed, never past the
	// session end the caller passes; zero means DefaultTTL. Negative is an
	// error.
	TTL time.Duration
}

// Signer signs admission tokens with its first key and publishes the
// public keys of all of them. It is immutable and safe for concurrent use;
// when the keys change, build a new one.
type Signer struct {
	issuer string
	ttl    time.Duration
	keyID  string
	priv   ed25519.PrivateKey
	header string // the protected header in base64url, and a dot
	public []PublicKey
	jwks   []byte
	etag   string
}

// New returns a Signer whose keys are derived from a ticket key ring
// (DeriveKeys): the ring's first key signs, all are published.
func New(ring []usher.Key, opts Options) (*Signer, error) {
	if len(ring) == 0 {
		return nil, errors.New("token keys: key ring is empty: at least one key is needed")
	}
	keys, err := DeriveKeys(ring)
	if err != nil {
		return nil, fmt.Errorf("token keys: %w", err)
	}
	return NewFromKeys(keys, opts)
}

// NewFromKeys returns a Signer with explicit keys: keys[0] signs, all are
// published. It reports every problem with the keys and options.
func NewFromKeys(keys []SigningKey, opts Options) (*Signer, error) {
	var errs []error
	if err := checkKeys(keys); err != nil {
		errs = append(errs, err)
	}
	if opts.TTL < 0 {
		errs = append(errs, fmt.Errorf("ttl must not be negative, got %s", opts.TTL))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("token keys: %w", errors.Join(errs...))
	}
	s := &Signer{issuer: opts.Issuer, ttl: opts.TTL, keyID: keys[0].ID}
	if s.issuer == "" {
		s.issuer = DefaultIssuer
	}
	if s.ttl == 0 {
		s.ttl = DefaultTTL
	}
	s.priv = keys[0].PrivateKey
	header, err := json.Marshal(struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
		Typ string `json:"typ"`
	}{Algorithm, keys[0].ID, "JWT"})
	if err != nil {
		return nil, fmt.Errorf("token keys: header: %w", err)
	}
	s.header = base64.RawURLEncoding.EncodeToString(header) + "."
	set := jose.JSONWebKeySet{Keys: make([]jose.JSONWebKey, 0, len(keys))}
	for _, k := range keys {
		pub := k.PrivateKey.Public().(ed25519.PublicKey)
		s.public = append(s.public, PublicKey{ID: k.ID, Key: pub})
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: pub, KeyID: k.ID, Algorithm: Algorithm, Use: "sig"})
	}
	if s.jwks, err = json.Marshal(set); err != nil {
		return nil, fmt.Errorf("token keys: key set: %w", err)
	}
	s.etag = etag(s.jwks)
	return s, nil
}

// Issuer returns the "iss" claim of the Signer's tokens.
func (s *Signer) Issuer() string { return s.issuer }

// TTL returns how long the Signer's tokens are valid at most.
func (s *Signer) TTL() time.Duration { return s.ttl }

// KeyID returns the id of the key that signs.
func (s *Signer) KeyID() string { return s.keyID }

// PublicKeys returns the public keys the Signer publishes, signing key
// first.
func (s *Signer) PublicKeys() []PublicKey {
	return append([]PublicKey(nil), s.public...)
}

// JWKS returns the public keys as a JSON Web Key Set (RFC 7517): one key
// per signing key, {"kty":"OKP","crv":"Ed25519","use":"sig","alg":"EdDSA",
// "kid":..,"x":..}. The caller must not modify the slice.
func (s *Signer) JWKS() []byte { return s.jwks }

// Verifier returns a Verifier for the Signer's own tokens: its public
// keys and issuer, the default leeway.
func (s *Signer) Verifier() *Verifier {
	v, _ := NewVerifier(s.public, VerifierOptions{Issuer: s.issuer}) // the keys passed checkKeys
	return v
}

// Sign returns a signed token (JWS compact serialization) with the claims.
// It requires c.Room and c.IssuedAt; the token expires at c.Expiry (the
// session end) or after the TTL, whichever comes first, and Sign refuses
// a session that has already ended. c.Issuer and c.KeyID are ignored.
func (s *Signer) Sign(c Claims) (string, error) {
	tok, _, err := s.sign(c)
	return tok, err
}

// sign is Sign that also returns the token's exp.
func (s *Signer) sign(c Claims) (string, int64, error) {
	if c.Room == "" {
		return "", 0, errors.New("sign admission token: room is empty")
	}
	if c.IssuedAt.IsZero() {
		return "", 0, errors.New("sign admission token: issued-at time is zero")
	}
	exp := c.IssuedAt.Add(s.ttl)
	if !c.Expiry.IsZero() && c.Expiry.Before(exp) {
		exp = c.Expiry
	}
	if exp.Unix() <= c.IssuedAt.Unix() {
		return "", 0, fmt.Errorf("sign admission token: session ends at %s, not after the issued-at time %s",
			c.Expiry.UTC().Format(time.RFC3339), c.IssuedAt.UTC().Format(time.RFC3339))
	}
	nbf := c.NotBefore
	if nbf.IsZero() {
		nbf = c.IssuedAt
	}
	w := wireClaims{
		Issuer:        s.issuer,
		Audience:      c.Room,
		Subject:       c.Subject(),
		IssuedAt:      c.IssuedAt.Unix(),
		NotBefore:     nbf.Unix(),
		Expiry:        exp.Unix(),
		QueuePosition: c.QueuePosition,
		WaitedS:       int64(c.Waited / time.Second),
	}
	if !c.AdmittedAt.IsZero() {
		w.AdmittedAt = c.AdmittedAt.Unix()
	}
	payload, err := json.Marshal(w)
	if err != nil {
		return "", 0, fmt.Errorf("sign admission token: %w", err)
	}
	return s.compact(payload), w.Expiry, nil
}

// compact returns the JWS compact serialization of payload (RFC 7515,
// section 7.1): header, payload and the Ed25519 signature of the two,
// each in unpadded base64url, joined by dots.
func (s *Signer) compact(payload []byte) string {
	enc := base64.RawURLEncoding
	n := len(s.header) + enc.EncodedLen(len(payload)) + 1 + enc.EncodedLen(ed25519.SignatureSize)
	b := make([]byte, 0, n)
	b = append(b, s.header...)
	b = enc.AppendEncode(b, payload)
	sig := ed25519.Sign(s.priv, b)
	b = append(b, '.')
	b = enc.AppendEncode(b, sig)
	return string(b)
}
