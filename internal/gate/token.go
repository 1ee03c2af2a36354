package gate

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/server"
	"github.com/usherhq/usher/internal/token"
)

// Tokens gives admitted requests a signed admission token and serves the
// keys and the verify endpoint (/__usher/jwks.json, /__usher/verify).
type Tokens struct {
	// Signer signs the tokens. Required.
	Signer *token.Signer
	// Header carries the token to the origin and to forward-auth callers
	// (empty: token.DefaultHeader). A client's own copy of it is removed
	// from every proxied request.
	Header string
	// CacheSize bounds the tokens kept to hand a visitor again while at
	// least half their life is left (0: token.DefaultCacheSize).
	CacheSize int

	cache  *token.Cache
	folded string // Header, foldName'd
	jwks   http.Handler
	verify http.Handler
}

// init readies t for use by a gate whose clock is now.
func (t *Tokens) init(now func() time.Time) {
	if t.Header == "" {
		t.Header = token.DefaultHeader
	}
	t.Header = http.CanonicalHeaderKey(t.Header)
	t.folded = foldName(t.Header)
	t.cache = t.Signer.NewCache(t.CacheSize)
	t.jwks = t.Signer.JWKSHandler()
	t.verify = t.Signer.Verifier().VerifyHandler(token.HandlerOptions{Header: t.Header, Now: now})
}

// admissionToken returns the token of an admitted visitor's request: for
// the room, the visitor, its session's end, its admission and its wait.
// "" when the gate has no tokens, the request is not an admitted
// visitor's, or signing fails (logged).
func (g *Gate) admissionToken(r *http.Request, m Match, d usher.Decision) string {
	if g.tokens == nil || d.Outcome != usher.Admit || m.Room == nil {
		return ""
	}
	t := &d.Ticket
	ses := m.Room.Session(t, m.At)
	end := ses.End
	if !ses.Valid {
		end = t.Until
	}
	c := token.Claims{
		Room:          m.Room.ID,
		VisitorID:     t.VisitorID,
		IssuedAt:      m.At,
		Expiry:        end,
		AdmittedAt:    t.AdmittedAt,
		QueuePosition: t.Position,
		Waited:        max(t.AdmittedAt.Sub(t.ArrivedAt), 0),
	}
	tok, err := g.tokens.cache.Sign(c)
	if err != nil {
		g.log.LogAttrs(r.Context(), slog.LevelError, "admission token not signed",
			slog.String("request_id", server.RequestIDFrom(r.Context())),
			slog.String("room", m.Room.ID), slog.Any("error", err))
		return ""
	}
	return tok
}
