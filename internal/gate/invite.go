package gate

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/guard"
	"github.com/usherhq/usher/internal/server"
)

// InviteUses counts the uses of invites: the store (usher.Store.UseInvite),
// shared by every node.
type InviteUses interface {
	UseInvite(ctx context.Context, room string, id [16]byte, max int, expires time.Time) (bool, error)
}

// InvitePath is where invite links point: OwnPrefix + "invite/" + text.
const InvitePath = OwnPrefix + "invite/"

// serveInvite answers an invite link: a valid invite with a use left makes
// a new visitor, admitted at once or at the front of the line as the invite
// says, and sends it on to next (a path on this site; the room's cookie
// path by default). A used-up, expired or forged link is refused (410 or
// 400) and changes nothing.
func (g *Gate) serveInvite(w http.ResponseWriter, r *http.Request, text string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		server.WriteError(w, r, http.StatusMethodNotAllowed, "use GET")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if g.invites == nil {
		g.fail(w, r, usher.Errorf(usher.ENotFound, "no such page"))
		return
	}
	now := g.now()
	inv, err := g.invites.Open(text, now)
	room := g.rooms[inv.Room]
	switch {
	case errors.Is(err, guard.ErrInviteExpired):
		server.WriteError(w, r, http.StatusGone, "this invite link has expired")
		return
	case err != nil || room == nil:
		g.log.LogAttrs(r.Context(), slog.LevelDebug, "invite refused",
			slog.String("request_id", server.RequestIDFrom(r.Context())), slog.Any("error", err))
		server.WriteError(w, r, http.StatusBadRequest, "this invite link is not valid")
		return
	}
	ok, err := g.inviteUses.UseInvite(context.WithoutCancel(r.Context()), room.ID, inv.ID, inv.Uses, inv.Expires)
	if err != nil {
		g.fail(w, r, &decideError{op: "use invite", room: room.ID, err: err})
		return
	}
	if !ok {
		server.WriteError(w, r, http.StatusGone, "this invite link has been used as many times as it may be")
		return
	}
	m, err := g.route(r)
	if err != nil {
		g.fail(w, r, err)
		return
	}
	m.Room, m.At = room, now
	d, err := g.decider.Decide(r.Context(), room, usher.Visit{Now: now, Client: m.ClientIP, Invite: inv.Mode})
	if err != nil {
		g.fail(w, r, &decideError{op: "decide", room: room.ID, err: err})
		return
	}
	g.log.LogAttrs(r.Context(), slog.LevelInfo, "invite used",
		slog.String("request_id", server.RequestIDFrom(r.Context())),
		slog.String("room", room.ID), slog.String("mode", inv.Mode.String()), slog.String("outcome", d.Outcome.String()))
	if g.observe != nil {
		g.observe(room.ID, d.Outcome, 0)
	}
	g.setTicket(w, r, m, d)
	http.Redirect(w, r, inviteNext(r.URL.Query().Get("next"), room), http.StatusSeeOther)
}

// inviteNext returns where an invite sends the visitor: next when it is a
// path on this site (not another site's URL, not usher's own paths), else
// the room's cookie path.
func inviteNext(next string, room *usher.Room) string {
	u, err := url.Parse(next)
	if next == "" || err != nil || u.Scheme != "" || u.Host != "" || u.User != nil ||
		!strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n\t") {
		return room.CookiePath()
	}
	if own, _ := looksOwn(cleanPath(u.Path)); own {
		return room.CookiePath()
	}
	return next
}
