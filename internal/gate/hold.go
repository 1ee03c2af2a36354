package gate

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/usherhq/usher"
)

// Holder is what a Decider may also do: tell how long to hold a visit
// before deciding it (admission.Engine.Hold). A near-front waiter's
// check-in that cannot go in before the next whole second is held to it,
// when places free, instead of being told to come back a second later.
type Holder interface {
	Hold(room *usher.Room, t *usher.Ticket, now time.Time) time.Duration
}

// MaxHeld is the most visits a gate holds at once; beyond, visits are
// decided at once. A hold is at most a second, and only for a waiter
// near the front with a ticket that is due.
const MaxHeld = 4096

// maxHold bounds one hold, whatever the Holder says.
const maxHold = time.Second

// held counts the visits held now.
type held struct{ n atomic.Int64 }

// hold waits as long as the decider asks for a visit with ticket t at
// now, at most maxHold, and returns the time to decide at: now when it
// did not hold, the clock's time after the hold otherwise. A client that
// hangs up ends the hold; the visit is then decided at once.
func (g *Gate) hold(ctx context.Context, room *usher.Room, t *usher.Ticket, now time.Time) time.Time {
	h, ok := g.decider.(Holder)
	if !ok || t == nil {
		return now
	}
	d := min(h.Hold(room, t, now), maxHold)
	if d <= 0 {
		return now
	}
	if g.held.n.Add(1) > MaxHeld {
		g.held.n.Add(-1)
		return now
	}
	defer g.held.n.Add(-1)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	if at := g.now(); at.After(now) {
		return at
	}
	return now
}

// heldTiming tells, in the answer's Server-Timing (the standard header a
// browser's developer tools show), how long a visit was held before its
// decision: a near-front check-in held for a place that frees on the next
// second is slower by design, and a load generator (usher bench) can tell
// that delay from a slow answer. Nothing is added for a visit not held.
func heldTiming(w http.ResponseWriter, held time.Duration) {
	if held <= 0 {
		return
	}
	w.Header().Add("Server-Timing", "usher-hold;dur="+strconv.FormatFloat(float64(held.Microseconds())/1000, 'f', 1, 64))
}
