// Package tokentest holds one corpus of admission tokens, good and bad,
// that every verifier of usher's tokens runs: usher's own
// (internal/token), the public package verify, and an independent JWT
// library in tests. A verifier passes when it accepts exactly the valid
// cases.
package tokentest

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/token"
)

// The corpus's fixed inputs: tokens are for Room, from Issuer, checked at
// Now.
const (
	Room   = "sale"
	Issuer = "usher"
)

// Now is the time at which the corpus is checked.
var Now = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// Visitor is the visitor id of the corpus's tokens.
var Visitor = [8]byte{0xde, 0xad, 0xbe, 0xef, 0x01, 0x23, 0x45, 0x67}

// Case is one token and what a verifier must make of it.
type Case struct {
	// Name says what the token is.
	Name string
	// Token is the token as sent.
	Token string
	// Valid is true when the token must be accepted.
	Valid bool
	// Reasons are the refusals (token.Reason names) a verifier may give;
	// empty when Valid.
	Reasons []string
	// UsherOnly is true for tokens only usher's verifiers must refuse:
	// signed with usher's real key but with a header or claims usher never
	// writes (no exp, a crit header), or a valid token written in
	// non-canonical base64. A general JWT library may accept them.
	UsherOnly bool
}

// Setup is the corpus with the keys and signer that made it.
type Setup struct {
	// Ring is the ticket key ring the signer's keys derive from: "k1"
	// signs, "k0" is published too.
	Ring []usher.Key
	// Signer signs with Ring.
	Signer *token.Signer
	// Cases are the tokens.
	Cases []Case
}

// MustKey returns a ring key whose 32-byte secret is b repeated.
func MustKey(id string, b byte) usher.Key {
	secret := make([]byte, 32)
	for i := range secret {
		secret[i] = b
	}
	return usher.Key{ID: id, Secret: secret}
}

// MustSigner returns a signer over ring with the options, or fails tb.
func MustSigner(tb testing.TB, ring []usher.Key, opts token.Options) *token.Signer {
	tb.Helper()
	s, err := token.New(ring, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// MustSign signs c, or fails tb.
func MustSign(tb testing.TB, s *token.Signer, c token.Claims) string {
	tb.Helper()
	tok, err := s.Sign(c)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// Claims returns the claims of a typical token issued at Now.
func Claims() token.Claims {
	return token.Claims{
		Room:          Room,
		VisitorID:     Visitor,
		IssuedAt:      Now,
		AdmittedAt:    Now.Add(-time.Minute),
		QueuePosition: 42,
		Waited:        17 * time.Minute,
	}
}

// New builds the corpus.
func New(tb testing.TB) *Setup {
	tb.Helper()
	ring := []usher.Key{MustKey("k1", 1), MustKey("k0", 2)}
	s := &Setup{Ring: ring, Signer: MustSigner(tb, ring, token.Options{Issuer: Issuer})}
	keys, err := token.DeriveKeys(ring)
	if err != nil {
		tb.Fatal(err)
	}
	priv := keys[0].PrivateKey
	pub := priv.Public().(ed25519.PublicKey)
	good := MustSign(tb, s.Signer, Claims())
	gh, gp, gs := split(good)

	valid := func(name, tok string) { s.Cases = append(s.Cases, Case{Name: name, Token: tok, Valid: true}) }
	bad := func(name, tok string, reasons ...string) {
		s.Cases = append(s.Cases, Case{Name: name, Token: tok, Reasons: reasons})
	}
	usherOnly := func(name, tok string, reasons ...string) {
		s.Cases = append(s.Cases, Case{Name: name, Token: tok, Reasons: reasons, UsherOnly: true})
	}
	at := func(mod func(*token.Claims)) string {
		c := Claims()
		mod(&c)
		return MustSign(tb, s.Signer, c)
	}

	valid("good", good)
	valid("signed_by_second_key", MustSign(tb, MustSigner(tb, []usher.Key{ring[1]}, token.Options{Issuer: Issuer}), Claims()))
	valid("expires_within_leeway", at(func(c *token.Claims) { c.IssuedAt = Now.Add(-5*time.Minute - 3*time.Second) }))
	valid("starts_within_leeway", at(func(c *token.Claims) { c.IssuedAt = Now.Add(3 * time.Second) }))

	bad("expired", at(func(c *token.Claims) { c.IssuedAt = Now.Add(-10 * time.Minute) }), "expired")
	bad("expired_past_leeway", at(func(c *token.Claims) { c.IssuedAt = Now.Add(-5*time.Minute - 6*time.Second) }), "expired")
	bad("session_ended", at(func(c *token.Claims) {
		c.IssuedAt = Now.Add(-time.Minute)
		c.Expiry = Now.Add(-10 * time.Second)
	}), "expired")
	bad("not_yet_valid", at(func(c *token.Claims) { c.NotBefore = Now.Add(time.Minute) }), "not_yet_valid")
	bad("wrong_audience", at(func(c *token.Claims) { c.Room = "other-room" }), "wrong_audience")
	bad("audience_prefix", at(func(c *token.Claims) { c.Room = Room + "x" }), "wrong_audience")
	bad("wrong_issuer", MustSign(tb, MustSigner(tb, ring, token.Options{Issuer: "https://evil.example"}), Claims()), "wrong_issuer")
	bad("other_ring_same_kid", MustSign(tb, MustSigner(tb, []usher.Key{MustKey("k1", 9)}, token.Options{Issuer: Issuer}), Claims()), "bad_signature")
	bad("unknown_kid", MustSign(tb, MustSigner(tb, []usher.Key{MustKey("zz", 8)}, token.Options{Issuer: Issuer}), Claims()), "unknown_key")

	// Algorithm confusion: the payload of a good token under headers that
	// ask for another algorithm, "signed" accordingly.
	payload := gp
	for _, alg := range []string{"none", "None", "NONE", "nOnE"} {
		h := b64json(map[string]any{"alg": alg, "kid": "k1", "typ": "JWT"})
		bad("alg_"+alg, h+"."+payload+".", "algorithm_not_allowed", "malformed")
		bad("alg_"+alg+"_with_signature", h+"."+payload+"."+gs, "algorithm_not_allowed", "malformed")
	}
	spki, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		tb.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki})
	x := base64.RawURLEncoding.EncodeToString(pub)
	for _, sk := range []struct {
		name   string
		secret []byte
	}{
		{"raw", pub},
		{"jwk_x", []byte(x)},
		{"pem", pemKey},
		{"jwks", s.Signer.JWKS()},
	} {
		for _, alg := range []string{"HS256", "HS384", "HS512"} {
			h := b64json(map[string]any{"alg": alg, "kid": "k1", "typ": "JWT"})
			bad(alg+"_public_key_"+sk.name, h+"."+payload+"."+hmacSign(alg, sk.secret, h+"."+payload), "algorithm_not_allowed", "malformed")
		}
	}
	for _, alg := range []string{"ES256", "RS256", "PS256", "Ed25519", "eddsa", "EDDSA", ""} {
		h := b64json(map[string]any{"alg": alg, "kid": "k1", "typ": "JWT"})
		bad("alg_"+strings.ToLower(alg)+"_eddsa_signature", h+"."+payload+"."+b64(ed25519.Sign(priv, []byte(h+"."+payload))),
			"algorithm_not_allowed", "malformed")
	}
	bad("no_alg", b64json(map[string]any{"kid": "k1"})+"."+payload+"."+gs, "algorithm_not_allowed", "malformed")

	// Tampering.
	sig := decode(tb, gs)
	bad("signature_truncated", gh+"."+gp+"."+gs[:len(gs)-4], "bad_signature", "malformed")
	bad("signature_empty", gh+"."+gp+".", "bad_signature", "malformed")
	bad("signature_missing", gh+"."+gp, "malformed")
	bad("signature_doubled", gh+"."+gp+"."+gs+gs, "bad_signature", "malformed")
	flipped := append([]byte(nil), sig...)
	flipped[20] ^= 0x01
	bad("signature_bit_flipped", gh+"."+gp+"."+b64(flipped), "bad_signature")
	zero := make([]byte, ed25519.SignatureSize)
	bad("signature_zero", gh+"."+gp+"."+b64(zero), "bad_signature")
	var claims map[string]any
	if err := json.Unmarshal(decode(tb, gp), &claims); err != nil {
		tb.Fatal(err)
	}
	edit := func(k string, v any) string {
		m := map[string]any{}
		for k, v := range claims {
			m[k] = v
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return b64json(m)
	}
	bad("payload_exp_extended", gh+"."+edit("exp", Now.Add(24*time.Hour).Unix())+"."+gs, "bad_signature")
	bad("payload_aud_edited", gh+"."+edit("aud", "other-room")+"."+gs, "bad_signature", "wrong_audience")
	bad("payload_sub_edited", gh+"."+edit("sub", "0000000000000001")+"."+gs, "bad_signature")
	bad("payload_reordered", gh+"."+edit("iss", Issuer)+"."+gs, "bad_signature")
	bad("header_kid_swapped", b64json(map[string]any{"alg": "EdDSA", "kid": "k0", "typ": "JWT"})+"."+gp+"."+gs, "bad_signature")
	bad("header_no_kid", b64json(map[string]any{"alg": "EdDSA", "typ": "JWT"})+"."+gp+"."+gs, "unknown_key", "bad_signature")
	bad("header_padded", gh+"="+"."+gp+"."+gs, "malformed")
	bad("payload_padded", gh+"."+gp+"=."+gs, "malformed", "bad_signature")
	bad("whitespace_inside", gh+"."+gp+" ."+gs, "malformed", "bad_signature")
	s.Cases = append(s.Cases, Case{Name: "signature_noncanonical", Token: gh + "." + gp + "." + noncanonical(gs), Reasons: []string{"malformed"}, UsherOnly: true})
	bad("standard_base64", gh+"."+strings.NewReplacer("-", "+", "_", "/").Replace(gp)+"."+strings.NewReplacer("-", "+", "_", "/").Replace(gs), "malformed", "bad_signature")

	// Garbage.
	bad("empty", "", "malformed")
	bad("one_part", "abc", "malformed")
	bad("dots", "..", "malformed", "algorithm_not_allowed")
	bad("four_parts", good+".x", "malformed")
	bad("five_parts_jwe", gh+"."+gp+"."+gs+".x.y", "malformed")
	bad("header_not_json", b64([]byte("not json"))+"."+gp+"."+gs, "malformed")
	bad("header_json_array", b64([]byte(`["EdDSA"]`))+"."+gp+"."+gs, "malformed")
	bad("json_serialization", `{"payload":"`+gp+`","protected":"`+gh+`","signature":"`+gs+`"}`, "malformed")
	bad("too_long", gh+"."+gp+"."+gs+strings.Repeat("A", 5000), "malformed")
	bad("bearer_prefix", "Bearer "+good, "malformed")

	// Signed with usher's key, but not what usher writes.
	sign := func(header, claims map[string]any) string {
		in := b64json(header) + "." + b64json(claims)
		return in + "." + b64(ed25519.Sign(priv, []byte(in)))
	}
	hdr := map[string]any{"alg": "EdDSA", "kid": "k1", "typ": "JWT"}
	usherOnly("claims_empty", sign(hdr, map[string]any{}), "malformed")
	noExp := map[string]any{"iss": Issuer, "aud": Room, "sub": "deadbeef01234567", "iat": Now.Unix()}
	usherOnly("claims_no_exp", sign(hdr, noExp), "malformed")
	usherOnly("payload_not_json", gh+"."+b64([]byte("hello"))+"."+b64(ed25519.Sign(priv, []byte(gh+"."+b64([]byte("hello"))))), "malformed")
	crit := map[string]any{"alg": "EdDSA", "kid": "k1", "typ": "JWT", "crit": []string{"exp"}, "exp": 1}
	usherOnly("header_crit", sign(crit, claims), "malformed", "bad_signature")
	b64false := map[string]any{"alg": "EdDSA", "kid": "k1", "b64": false, "crit": []string{"b64"}}
	usherOnly("header_b64_false", sign(b64false, claims), "malformed", "bad_signature")
	return s
}

// noncanonical returns the unpadded base64url s (whose length is not a
// multiple of 4) with a different last character that decodes to the
// same bytes: one of the unused low bits set.
func noncanonical(s string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, s[len(s)-1])
	return s[:len(s)-1] + string(alphabet[i^1])
}

// split returns the three parts of a compact JWS.
func split(tok string) (header, payload, sig string) {
	parts := strings.SplitN(tok, ".", 3)
	return parts[0], parts[1], parts[2]
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func b64json(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of plain values
	}
	return b64(b)
}

func decode(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// hmacSign signs input with HMAC and the hash alg (HS256, HS384, HS512)
// names.
func hmacSign(alg string, secret []byte, input string) string {
	h := sha256.New
	switch alg {
	case "HS384":
		h = sha512.New384
	case "HS512":
		h = sha512.New
	}
	m := hmac.New(h, secret)
	m.Write([]byte(input))
	return b64(m.Sum(nil))
}

// WriteCorpus writes each case's token as a seed of a fuzz target whose
// only argument is a string, into dir (testdata/fuzz/<FuzzName>), one file
// per case, replacing what is there.
func WriteCorpus(dir string, cases []Case) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range cases {
		body := "go test fuzz v1\nstring(" + strconv.Quote(c.Token) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, c.Name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}
