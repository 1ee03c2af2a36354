package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// The headers of a webhook delivery.
const (
	// HeaderSignature carries "t=<unix seconds>,v1=<hex HMAC-SHA256 of
	// the secret over t + "." + body>".
	HeaderSignature = "Usher-Signature"
	// HeaderEvent carries the event's type.
	HeaderEvent = "Usher-Event"
	// HeaderDelivery carries the event's id, the same on every retry.
	HeaderDelivery = "Usher-Delivery"
	// HeaderAttempt carries the attempt's number, 1 for the first.
	HeaderAttempt = "Usher-Attempt"
)

// Sign returns the Usher-Signature value of body sent at t with secret.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verification errors.
var (
	ErrSignatureFormat = errors.New("signature header malformed")
	ErrSignatureTime   = errors.New("signature timestamp outside the tolerance")
	ErrSignature       = errors.New("signature does not match")
)

// Verify checks an Usher-Signature header value for body against secret
// at now: the timestamp within tolerance of now (either way; replay
// protection) and one of its v1 signatures matching, compared in constant
// time. Receivers written in Go can use it; docs/webhooks.md shows the
// same in a few lines.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrSignatureFormat
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil {
				return ErrSignatureFormat
			}
			sigs = append(sigs, b)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrSignatureFormat
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrSignatureTime
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			return nil
		}
	}
	return ErrSignature
}
