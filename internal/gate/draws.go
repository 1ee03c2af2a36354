package gate

import (
	"context"
	_ "embed"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/draw"
	"github.com/usherhq/usher/internal/server"
)

// DrawPublisher is a Decider that publishes its verifiable draws
// (admission.Engine): see docs/fairness.md.
type DrawPublisher interface {
	// Draws returns what /__usher/draws/<room> publishes at now.
	Draws(ctx context.Context, room *usher.Room, now time.Time) (draw.Room, error)
}

// DrawsTTL is how long a room's published draws are served from memory
// (and may be cached by others: Cache-Control max-age).
const DrawsTTL = 5 * time.Second

// drawsCache keeps each room's published draws, encoded, for DrawsTTL.
type drawsCache struct {
	mu    sync.Mutex
	rooms map[string]cachedDraws
}

type cachedDraws struct {
	at   time.Time
	body []byte
	err  error
}

// get returns room's draws at now: the cached ones if younger than
// DrawsTTL, else fetch's (one fetch at a time; the others wait for it).
func (c *drawsCache) get(room string, now time.Time, fetch func() ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.rooms[room]; ok && now.Sub(e.at) < DrawsTTL && !now.Before(e.at) {
		return e.body, e.err
	}
	body, err := fetch()
	if c.rooms == nil {
		c.rooms = map[string]cachedDraws{}
	}
	c.rooms[room] = cachedDraws{at: now, body: body, err: err}
	return body, err
}

//go:embed draws_verify.html
var drawsVerifyHTML []byte

//go:embed draws_verify.js
var drawsVerifyJS []byte

// drawsVerifyCSP lets the verify page run its own script and read the
// room's draws, nothing else.
const drawsVerifyCSP = "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// serveDraws answers draws/<room> (the room's verifiable draws as JSON),
// draws/<room>/verify (a page that checks them in the browser) and
// draws/<room>/verify.js (its script).
func (g *Gate) serveDraws(w http.ResponseWriter, r *http.Request, arg string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		server.WriteError(w, r, http.StatusMethodNotAllowed, "use GET")
		return
	}
	id, page, _ := strings.Cut(arg, "/")
	room := g.rooms[id]
	pub, ok := g.decider.(DrawPublisher)
	if room == nil || !ok {
		g.fail(w, r, usher.Errorf(usher.ENotFound, "no room %q", id))
		return
	}
	switch page {
	case "":
	case "verify":
		w.Header().Set("Content-Security-Policy", drawsVerifyCSP)
		writeStatic(w, r, "text/html; charset=utf-8", drawsVerifyHTML)
		return
	case "verify.js":
		writeStatic(w, r, "text/javascript; charset=utf-8", drawsVerifyJS)
		return
	default:
		g.fail(w, r, usher.Errorf(usher.ENotFound, "no such page"))
		return
	}
	now := g.now()
	body, err := g.draws.get(room.ID, now, func() ([]byte, error) {
		d, err := pub.Draws(context.WithoutCancel(r.Context()), room, now)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(d)
		return append(b, '\n'), err
	})
	if err != nil {
		g.fail(w, r, &decideError{op: "draws", room: room.ID, err: err})
		return
	}
	w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(int(DrawsTTL/time.Second)))
	writeJSONBytes(w, r, http.StatusOK, body)
}

// writeStatic writes a static file of usher's own, cacheable for a minute.
func writeStatic(w http.ResponseWriter, r *http.Request, ctype string, b []byte) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "public, max-age=60")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}

// drawOf returns the verifiable draw a waiter of decision d is in and its
// entry (docs/fairness.md), so that it can find itself in the published
// order: a shuffled pre-queue's, or a random room's current lottery
// epoch's; none otherwise.
func drawOf(m Match, d usher.Decision, s *usher.Settings) (id, entry string) {
	var e [16]byte
	switch {
	case d.Phase == usher.Prequeue && d.Event != nil && d.Event.ShuffleAtStart:
		id = draw.ShuffleID(d.Event.Start)
	case s.QueueingMethod == usher.Random && d.Phase != usher.Prequeue:
		id = draw.LotteryID(s.RefreshInterval, draw.Epoch(draw.Window(m.At, s.RefreshInterval)))
	default:
		return "", ""
	}
	e = draw.Entry(m.Room.ID, d.Ticket.VisitorID)
	return id, draw.Hex(e[:])
}
