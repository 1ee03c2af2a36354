package gate

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/server"
)

// CommandHeader is the response header an origin sets to command usher:
// "revoke" ends the visitor's session at once (Cloudflare's
// Cf-Waiting-Room-Command: revoke is the model). usher removes it before
// the response reaches the visitor.
const CommandHeader = "Usher-Command"

// RevokePath ends the session of the visitor an admission token names:
// POST, with the token in Authorization: Bearer (the origin that got it
// upstream sends it back). For forward-auth setups, where the origin's
// responses do not pass through usher.
const RevokePath = OwnPrefix + "revoke"

// Revoker ends a visitor's session (the admission engine).
type Revoker interface {
	// Revoke ends the session of visitor and reports whether this call
	// ended it: false for a session ended already (revoked before, on any
	// node), which it leaves as it is.
	Revoke(ctx context.Context, room *usher.Room, visitor [8]byte, now time.Time) (bool, error)
}

// modifyResponse applies an origin's command to an admitted visitor's
// response.
func (g *Gate) modifyResponse(resp *http.Response) error {
	if len(g.health) > 0 {
		g.recordHealth(resp)
	}
	cmd := resp.Header.Get(CommandHeader)
	if cmd == "" {
		return nil
	}
	resp.Header.Del(CommandHeader)
	info, _ := resp.Request.Context().Value(proxyKey{}).(*proxyInfo)
	if !strings.EqualFold(strings.TrimSpace(cmd), "revoke") || info == nil || !info.admitted {
		return nil
	}
	rv, ok := g.decider.(Revoker)
	room := g.rooms[info.room]
	if !ok || room == nil {
		return nil
	}
	r := resp.Request
	if _, err := rv.Revoke(r.Context(), room, info.visitor, g.now()); err != nil {
		g.log.LogAttrs(r.Context(), slog.LevelError, "revoke failed",
			slog.String("request_id", server.RequestIDFrom(r.Context())), slog.String("room", room.ID), slog.Any("error", err))
	}
	// The visitor's browser drops the ticket.
	c := ticketCookie(room, info.rawPath, info.scheme, "")
	c.MaxAge = -1
	resp.Header.Add("Set-Cookie", c.String())
	return nil
}

// serveRevoke ends the session an admission token names. A session ended
// already (revoked before, by this node or another) is left as it is:
// the same 204, nothing counted, nothing told.
func (g *Gate) serveRevoke(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		server.WriteError(w, r, http.StatusMethodNotAllowed, "use POST")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	rv, ok := g.decider.(Revoker)
	if g.tokens == nil || !ok {
		g.fail(w, r, usher.Errorf(usher.ENotFound, "no such page"))
		return
	}
	auth := r.Header.Get("Authorization")
	tok, found := strings.CutPrefix(auth, "Bearer ")
	if !found || strings.TrimSpace(tok) == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="usher"`)
		server.WriteError(w, r, http.StatusUnauthorized, "the admission token is required in Authorization: Bearer")
		return
	}
	now := g.now()
	room := r.URL.Query().Get("room")
	c, err := g.tokens.Signer.Verifier().Verify(strings.TrimSpace(tok), room, now)
	rm := g.rooms[room]
	if err != nil || rm == nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="usher", error="invalid_token"`)
		server.WriteError(w, r, http.StatusUnauthorized, "the admission token is not valid for this room")
		return
	}
	ended, err := rv.Revoke(r.Context(), rm, c.VisitorID, now)
	if err != nil {
		g.fail(w, r, &decideError{op: "revoke", room: rm.ID, err: err})
		return
	}
	if ended {
		g.log.LogAttrs(r.Context(), slog.LevelInfo, "session revoked",
			slog.String("request_id", server.RequestIDFrom(r.Context())), slog.String("room", rm.ID), slog.String("visitor", c.Subject()))
	}
	// The same answer whether this call ended the session or it had ended
	// already: a revoke is idempotent.
	w.WriteHeader(http.StatusNoContent)
}
