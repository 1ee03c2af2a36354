package gate

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/server"
)

// OwnPrefix is the path prefix reserved for usher: requests under it are
// answered by usher and never proxied, whatever the rooms.
const OwnPrefix = "/__usher/"

// looksOwn reports whether the cleaned path p reads as OwnPrefix or under
// it, letter case ignored, and returns the rest of it. It is for refusing
// (a redirect there), never for serving: what usher serves as its own is
// readPath's to say.
func looksOwn(p string) (bool, string) {
	if len(p) < len(OwnPrefix)-1 || !strings.EqualFold(p[:len(OwnPrefix)-1], OwnPrefix[:len(OwnPrefix)-1]) {
		return false, ""
	}
	if len(p) == len(OwnPrefix)-1 {
		return true, ""
	}
	if p[len(OwnPrefix)-1] != '/' {
		return false, ""
	}
	return true, p[len(OwnPrefix):]
}

// serveOwn answers usher's own paths (rest is the path after OwnPrefix, as
// readPath read it: letter case counts):
//
//	status/<room>  the room's live counters as JSON
//	draws/<room>   the room's verifiable draws as JSON, and a page that
//	               checks them (serveDraws)
//	invite/<text>  an invite link (serveInvite)
//	page/<note>    the page of a forward-auth refusal (PagePath)
//	revoke         end the session an admission token names (RevokePath)
//	jwks.json      the admission tokens' public keys
//	verify         whether an admission token is valid for a room
//	assets/<name>  the static assets of the pages
//
// Anything else is 404, forward auth (AuthPath) included: it is answered
// on its private listener only (ForwardAuth), never to a visitor.
func (g *Gate) serveOwn(w http.ResponseWriter, r *http.Request, rest string) {
	kind, arg, _ := strings.Cut(rest, "/")
	if kind != "verify" && kind != "revoke" {
		dropBody(w, r) // only verify reads a body (a form)
	}
	switch kind {
	case "status":
		g.serveStatus(w, r, arg)
	case "draws":
		g.serveDraws(w, r, arg)
	case "invite":
		g.serveInvite(w, r, arg)
	case "auth":
		g.fail(w, r, usher.Errorf(usher.ENotFound, "forward auth is answered on usher's private forward_auth.listen only, not here"))
	case "page":
		g.servePage(w, r, arg)
	case "revoke":
		g.serveRevoke(w, r)
	case "jwks.json":
		if g.tokens == nil || arg != "" {
			g.fail(w, r, usher.Errorf(usher.ENotFound, "no such page"))
			return
		}
		g.tokens.jwks.ServeHTTP(w, r)
	case "verify":
		if g.tokens == nil || arg != "" {
			g.fail(w, r, usher.Errorf(usher.ENotFound, "no such page"))
			return
		}
		g.tokens.verify.ServeHTTP(w, r)
	case "assets":
		r2 := new(http.Request)
		*r2 = *r
		u := *r.URL
		u.Path, u.RawPath = "/"+arg, ""
		r2.URL = &u
		g.pages.AssetHandler().ServeHTTP(w, r2)
	default:
		g.fail(w, r, usher.Errorf(usher.ENotFound, "no such page"))
	}
}

// statusJSON is the answer of /__usher/status/<room>.
type statusJSON struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	Active             int64  `json:"active"`
	Waiting            int64  `json:"waiting"`
	AdmittedLastMinute int64  `json:"admitted_last_minute"`
	Slots              int64  `json:"slots"`
	TotalActiveUsers   int    `json:"total_active_users"`
	NewUsersPerMinute  int    `json:"new_users_per_minute"`
	QueueingMethod     string `json:"queueing_method"`
}

func (g *Gate) serveStatus(w http.ResponseWriter, r *http.Request, id string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		server.WriteError(w, r, http.StatusMethodNotAllowed, "use GET")
		return
	}
	room := g.rooms[id]
	if room == nil {
		g.fail(w, r, usher.Errorf(usher.ENotFound, "no room %q", id))
		return
	}
	now := g.now()
	st, err := g.status.get(room, now, func() (usher.RoomStats, error) {
		return g.decider.Status(context.WithoutCancel(r.Context()), room, now)
	})
	if err != nil {
		g.fail(w, r, &decideError{op: "status", room: room.ID, err: err})
		return
	}
	set := room.At(now).Settings // a running event's over the room's
	method := string(set.QueueingMethod)
	if method == "" {
		method = string(usher.FIFO)
	}
	w.Header().Set("Cache-Control", "no-store")
	g.writeJSON(w, r, http.StatusOK, statusJSON{
		ID:                 room.ID,
		Name:               room.Name,
		Active:             st.Active,
		Waiting:            st.Waiting,
		AdmittedLastMinute: st.AdmittedLastMinute,
		Slots:              st.Slots,
		TotalActiveUsers:   set.TotalActiveUsers,
		NewUsersPerMinute:  set.NewUsersPerMinute,
		QueueingMethod:     method,
	})
}

// StatusTTL is how long a room's public status is served from memory: the
// public status endpoint costs at most one store call per room per node and
// per StatusTTL, however many ask.
const StatusTTL = time.Second

// statusCache keeps each room's latest status for StatusTTL.
type statusCache struct {
	mu    sync.Mutex
	rooms map[string]cachedStatus
}

type cachedStatus struct {
	at  time.Time
	st  usher.RoomStats
	err error
}

// get returns room's status at now: the cached one if younger than
// StatusTTL, else fetch's (one fetch at a time; the others wait for it).
func (c *statusCache) get(room *usher.Room, now time.Time, fetch func() (usher.RoomStats, error)) (usher.RoomStats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.rooms[room.ID]; ok && now.Sub(e.at) < StatusTTL && !now.Before(e.at) {
		return e.st, e.err
	}
	st, err := fetch()
	if c.rooms == nil {
		c.rooms = map[string]cachedStatus{}
	}
	c.rooms[room.ID] = cachedStatus{at: now, st: st, err: err}
	return st, err
}
