package token

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultHeader is the request header that carries the token to the
// origin when HandlerOptions.Header is empty.
const DefaultHeader = "X-Usher-Admission"

// JWKSCacheControl is the Cache-Control of the key set: caches may keep it
// five minutes, so a new signing key must be published (second in the
// ring) at least that long before it signs.
const JWKSCacheControl = "public, max-age=300"

// maxFormBytes bounds the body of a verify request sent as a form.
const maxFormBytes = 16 << 10

func etag(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
}

// JWKSHandler serves the public keys (JWKS) for GET and HEAD, cacheable
// for five minutes, with an ETag; other methods get 405.
func (s *Signer) JWKSHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "use GET", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Cache-Control", JWKSCacheControl)
		h.Set("ETag", s.etag)
		h.Set("X-Content-Type-Options", "nosniff")
		if matchETag(r.Header.Values("If-None-Match"), s.etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", "application/jwk-set+json")
		h.Set("Content-Length", strconv.Itoa(len(s.jwks)))
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(s.jwks)
	})
}

// matchETag reports whether an If-None-Match header lists tag (or *).
func matchETag(values []string, tag string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			part = strings.TrimPrefix(strings.TrimSpace(part), "W/")
			if part == tag || part == "*" {
				return true
			}
		}
	}
	return false
}

// HandlerOptions tune VerifyHandler.
type HandlerOptions struct {
	// Header is a request header that may carry the token, besides
	// "Authorization: Bearer" and the "token" parameter; empty means
	// DefaultHeader.
	Header string
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// verifyAnswer is the JSON answer of VerifyHandler.
type verifyAnswer struct {
	Valid         bool   `json:"valid"`
	Room          string `json:"room,omitempty"`
	Subject       string `json:"sub,omitempty"`
	Issuer        string `json:"iss,omitempty"`
	Expiry        int64  `json:"exp,omitempty"`
	AdmittedAt    int64  `json:"admitted_at,omitempty"`
	QueuePosition *int64 `json:"queue_position,omitempty"`
	WaitedS       *int64 `json:"waited_s,omitempty"`
	Error         string `json:"error,omitempty"`
	Message       string `json:"message,omitempty"`
}

// VerifyHandler answers whether a token is valid for a room, for origins
// that cannot verify tokens themselves. It takes GET, HEAD and POST (a
// form); the token comes from "Authorization: Bearer", else the header in
// opts, else the "token" parameter; the room from the "room" parameter
// (required). It answers, never cacheable:
//
//	200 {"valid":true,"room":..,"sub":..,"iss":..,"exp":..,"admitted_at":..,"queue_position":..,"waited_s":..}
//	401 {"valid":false,"error":"expired","message":"..."} (error is Reason's name, or "missing_token")
//	400 {"valid":false,"error":"missing_room",...} without a room
//	405 for other methods
func (v *Verifier) VerifyHandler(opts HandlerOptions) http.Handler {
	header := opts.Header
	if header == "" {
		header = DefaultHeader
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodPost:
		default:
			w.Header().Set("Allow", "GET, HEAD, POST")
			writeAnswer(w, r, http.StatusMethodNotAllowed, verifyAnswer{Error: "method_not_allowed", Message: "use GET or POST"})
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		}
		if err := r.ParseForm(); err != nil {
			writeAnswer(w, r, http.StatusBadRequest, verifyAnswer{Error: "bad_request", Message: "the form does not parse"})
			return
		}
		room := r.Form.Get("room")
		if room == "" {
			writeAnswer(w, r, http.StatusBadRequest, verifyAnswer{Error: "missing_room", Message: "the room parameter is required"})
			return
		}
		tok := requestToken(r, header)
		if tok == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="usher"`)
			writeAnswer(w, r, http.StatusUnauthorized, verifyAnswer{Room: room, Error: "missing_token",
				Message: "no token in the Authorization header, the " + header + " header or the token parameter"})
			return
		}
		c, err := v.Verify(tok, room, now())
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="usher", error="invalid_token"`)
			writeAnswer(w, r, http.StatusUnauthorized, verifyAnswer{Room: room, Error: Reason(err), Message: err.Error()})
			return
		}
		a := verifyAnswer{
			Valid:         true,
			Room:          c.Room,
			Subject:       c.Subject(),
			Issuer:        c.Issuer,
			Expiry:        c.Expiry.Unix(),
			QueuePosition: &c.QueuePosition,
			WaitedS:       new(int64(c.Waited / time.Second)),
		}
		if !c.AdmittedAt.IsZero() {
			a.AdmittedAt = c.AdmittedAt.Unix()
		}
		writeAnswer(w, r, http.StatusOK, a)
	})
}

// requestToken finds the token of a verify request.
func requestToken(r *http.Request, header string) string {
	if auth := r.Header.Get("Authorization"); len(auth) > len("Bearer ") && strings.EqualFold(auth[:len("Bearer ")], "Bearer ") {
		return strings.TrimSpace(auth[len("Bearer "):])
	}
	if t := strings.TrimSpace(r.Header.Get(header)); t != "" {
		return t
	}
	return strings.TrimSpace(r.Form.Get("token"))
}

func writeAnswer(w http.ResponseWriter, r *http.Request, status int, a verifyAnswer) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	_ = json.NewEncoder(w).Encode(a)
}
