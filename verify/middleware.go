package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// CommandHeader is the response header with which an origin tells usher
// to act on the visitor's session.
const CommandHeader = "Usher-Command"

// retryAfterSeconds is the Retry-After of a 503 when the keys are
// unavailable.
const retryAfterSeconds = 5

type claimsKey struct{}

// ClaimsFrom returns the claims the middleware put in a request's
// context, and whether there were any.
func ClaimsFrom(ctx context.Context) (Claims, bool) {
	c, ok := ctx.Value(claimsKey{}).(Claims)
	return c, ok
}

// NewContext returns a copy of ctx that carries c, as the middleware
// makes it; for tests of handlers that read ClaimsFrom.
func NewContext(ctx context.Context, c Claims) context.Context {
	return context.WithValue(ctx, claimsKey{}, c)
}

// Middleware passes to next only requests with a valid token for the
// room, their claims in the context (ClaimsFrom). Others never reach
// next:
//
//   - GET or HEAD from a browser (Accept lists text/html), when RoomURL
//     is set: 302 to RoomURL, so the visitor joins the line;
//   - anything else: 401 with {"error": reason, "message": ..., "room_url": ...},
//     reason one of "missing_token", "expired", "wrong_audience",
//     "bad_signature", ... as usher's verify endpoint names them;
//   - when usher's keys cannot be fetched and none are held: 503 with
//     Retry-After, whatever the request.
//
// Refusals are never cacheable.
func (v *Verifier) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimSpace(r.Header.Get(v.header))
		if tok == "" {
			v.refuse(w, r, ErrMissing)
			return
		}
		c, err := v.VerifyContext(r.Context(), tok)
		if err != nil {
			v.refuse(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), c)))
	})
}

// refusal is the JSON body of a refused request.
type refusal struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	RoomURL string `json:"room_url,omitempty"`
}

func (v *Verifier) refuse(w http.ResponseWriter, r *http.Request, err error) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	if errors.Is(err, ErrKeysUnavailable) {
		h.Set("Retry-After", strconv.Itoa(retryAfterSeconds))
		writeJSON(w, r, http.StatusServiceUnavailable, refusal{Error: reason(err),
			Message: "admission cannot be checked right now; try again shortly"})
		return
	}
	if v.roomURL != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) && acceptsHTML(r) {
		http.Redirect(w, r, v.roomURL, http.StatusFound)
		return
	}
	msg := err.Error()
	if errors.Is(err, ErrMissing) {
		msg = "no admission token: enter through the waiting room"
	}
	h.Set("WWW-Authenticate", `Usher realm="`+v.room+`"`)
	writeJSON(w, r, http.StatusUnauthorized, refusal{Error: reason(err), Message: msg, RoomURL: v.roomURL})
}

func writeJSON(w http.ResponseWriter, r *http.Request, status int, body any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	_ = json.NewEncoder(w).Encode(body)
}

// acceptsHTML reports whether the request's Accept header lists text/html
// (or application/xhtml+xml) with a non-zero quality.
func acceptsHTML(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, params, _ := strings.Cut(part, ";")
			mt = strings.ToLower(strings.TrimSpace(mt))
			if mt != "text/html" && mt != "application/xhtml+xml" {
				continue
			}
			if !zeroQuality(params) {
				return true
			}
		}
	}
	return false
}

// zeroQuality reports whether media type parameters say q=0.
func zeroQuality(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		return err == nil && q == 0
	}
	return false
}

// Revoke asks usher to end the visitor's session (after a checkout, for
// example): it sets the response header "Usher-Command: revoke". Call it
// before the response's header is written (before WriteHeader or the
// first Write). usher acts on the header where the response passes
// through it, and takes it off before the response reaches the visitor;
// the visitor's next request starts over as a new visitor. See
// docs/tokens.md in usher's repository for the setups that pass it.
func Revoke(w http.ResponseWriter) {
	w.Header().Set(CommandHeader, "revoke")
}

// RevokeSession asks usher to end the session of the visitor a token names,
// for setups where the origin's responses do not pass through usher
// (forward auth): it POSTs the token to the revoke endpoint next to the
// JWKS (…/__usher/revoke?room=ROOM). The slot is free at once; the
// visitor's ticket is refused from its next renewal on (within a few
// seconds).
func (v *Verifier) RevokeSession(ctx context.Context, token string) error {
	u, err := url.Parse(v.jwksURL)
	if err != nil {
		return err
	}
	u.Path = strings.TrimSuffix(u.Path, "jwks.json") + "revoke"
	u.RawQuery = url.Values{"room": {v.room}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	client := v.client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("verify: revoke: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("verify: revoke: usher answered %s", resp.Status)
	}
	return nil
}
