package gate

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/usherhq/usher"
)

// holdingDecider is a fakeDecider that asks for a hold of each waiting
// ticket.
type holdingDecider struct {
	fakeDecider
	hold  time.Duration
	asked int
}

func (h *holdingDecider) Hold(room *usher.Room, t *usher.Ticket, now time.Time) time.Duration {
	h.asked++
	return h.hold
}

// TestHoldDelaysTheDecision: a waiting ticket the decider asks to hold is
// decided after the hold, at the clock's time then, at most a second
// later; a visitor without a ticket is never held; a client that hangs up
// ends the hold at once. A held answer says how long in Server-Timing.
func TestHoldDelaysTheDecision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		room := testRoom("sale", "/", "http://127.0.0.1:1")
		tk := usher.Ticket{VisitorID: [8]byte{9}, State: usher.Waiting, ArrivedAt: time.Now().Add(-time.Minute)}
		for _, tt := range []struct {
			name      string
			hold      time.Duration
			cookie    bool
			hangUp    bool
			wantAsked int
			wantWait  time.Duration
		}{
			{"held", 400 * time.Millisecond, true, false, 1, 400 * time.Millisecond},
			{"at most a second", 5 * time.Second, true, false, 1, time.Second},
			{"no hold asked", 0, true, false, 1, 0},
			{"a new visitor is never held", time.Second, false, false, 0, 0},
			{"a client that hangs up", time.Second, true, true, 1, 0},
		} {
			dec := &holdingDecider{hold: tt.hold}
			dec.DecideFn = decide(waiting(3))
			g, _ := newGate(t, Options{Rooms: []*usher.Room{room}, Decider: dec, Now: time.Now})
			ctx, cancel := context.WithCancel(context.Background())
			r := httptest.NewRequestWithContext(ctx, "GET", "/", nil)
			if tt.cookie {
				r.Header.Add("Cookie", room.CookieName()+"="+mustSeal(t, tk, room))
			}
			if tt.hangUp {
				cancel()
			}
			start := time.Now()
			w := serve(g, r)
			cancel()
			// The answer tells how long it was held, and only then.
			want := ""
			if tt.wantWait > 0 {
				want = fmt.Sprintf("usher-hold;dur=%.1f", float64(tt.wantWait.Microseconds())/1000)
			}
			if got := w.Header().Get("Server-Timing"); got != want {
				t.Errorf("%s: Server-Timing %q, want %q", tt.name, got, want)
			}
			if took := time.Since(start); took != tt.wantWait {
				t.Errorf("%s: answered after %v, want %v", tt.name, took, tt.wantWait)
			}
			if dec.asked != tt.wantAsked {
				t.Errorf("%s: Hold asked %d times, want %d", tt.name, dec.asked, tt.wantAsked)
			}
			if vs := dec.visits; len(vs) != 1 || !vs[0].Now.Equal(start.Add(tt.wantWait)) {
				t.Errorf("%s: decided at %v, want %v after the request", tt.name, vs, tt.wantWait)
			}
			if n := g.held.n.Load(); n != 0 {
				t.Errorf("%s: %d visits still counted as held", tt.name, n)
			}
		}
	})
}

// TestHoldBounded: beyond MaxHeld visits held at once, a visit is decided
// at once.
func TestHoldBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		room := testRoom("sale", "/", "http://127.0.0.1:1")
		dec := &holdingDecider{hold: time.Second}
		dec.DecideFn = decide(waiting(3))
		g, _ := newGate(t, Options{Rooms: []*usher.Room{room}, Decider: dec, Now: time.Now})
		g.held.n.Store(MaxHeld)
		tk := usher.Ticket{VisitorID: [8]byte{9}, State: usher.Waiting, ArrivedAt: time.Now().Add(-time.Minute)}
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Add("Cookie", room.CookieName()+"="+mustSeal(t, tk, room))
		start := time.Now()
		serve(g, r)
		if took := time.Since(start); took != 0 {
			t.Fatalf("with %d visits held, one more was held %v", MaxHeld, took)
		}
		if n := g.held.n.Load(); n != MaxHeld {
			t.Fatalf("held count %d after the visit, want %d", n, MaxHeld)
		}
	})
}
