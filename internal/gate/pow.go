package gate

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/guard"
	"github.com/usherhq/usher/internal/server"
	"github.com/usherhq/usher/internal/web"
)

// PoWCookie returns the name of the cookie that carries a room's
// proof-of-work solution: one per cookie suffix, so that two rooms'
// solutions never meet.
func PoWCookie(room *usher.Room) string {
	if room.CookieSuffix == "" {
		return guard.Cookie
	}
	return guard.Cookie + "_" + room.CookieSuffix
}

// powPrefix is the client prefix a challenge is bound to: the address
// (IPv4) or its /64 (IPv6), or everything when the address is unknown.
func powPrefix(ip netip.Addr) netip.Prefix {
	if p := usher.ClientPrefix(ip, 32, 64); p.IsValid() {
		return p
	}
	return netip.PrefixFrom(netip.IPv4Unspecified(), 0)
}

// proof checks the proof of work of a visitor without a ticket in a room
// that asks for one. It returns nil when the visitor may go on to the
// decision (no challenge is due, or it brought a good solution, which is
// then spent), else the challenge to answer with.
func (g *Gate) proof(r *http.Request, m *Match, sched *usher.Schedule) (*guard.Challenge, error) {
	pow := sched.ProofOfWork
	if pow.Difficulty == 0 || g.pow == nil {
		return nil, nil
	}
	if !pow.Always && !g.queueing(r, m, sched) {
		return nil, nil
	}
	prefix := powPrefix(m.ClientIP)
	if c, n, ok := solution(r, m.Room); ok {
		solved, err := g.pow.Verify(c, n, m.Room.ID, prefix, pow.Difficulty, m.At)
		if err == nil {
			var fresh bool
			fresh, err = g.spent.Spend(r.Context(), m.Room.ID, solved.ID, solved.Until)
			if err == nil && fresh {
				m.Solved = true
				return nil, nil
			}
			if err == nil {
				err = errSpent
			}
		}
		g.log.LogAttrs(r.Context(), slog.LevelDebug, "proof of work refused",
			slog.String("request_id", server.RequestIDFrom(r.Context())),
			slog.String("room", m.Room.ID), slog.Any("error", err))
	}
	ch, err := g.pow.Issue(m.Room.ID, prefix, pow.Difficulty, m.At)
	if err != nil {
		return nil, err
	}
	return &ch, nil
}

// errSpent is why a solution already used is refused.
var errSpent = errors.New("proof of work: solution already used")

// queueing reports whether the room queues now: a pre-queue, queue_all,
// someone waiting or no slot free (from the room's status, at most
// StatusTTL old). A room whose status cannot be read is taken to queue.
func (g *Gate) queueing(r *http.Request, m *Match, sched *usher.Schedule) bool {
	if sched.Phase == usher.Prequeue || sched.QueueAll {
		return true
	}
	st, err := g.status.get(m.Room, m.At, func() (usher.RoomStats, error) {
		return g.decider.Status(context.WithoutCancel(r.Context()), m.Room, m.At)
	})
	return err != nil || st.Waiting > 0 || st.Slots <= 0
}

// solution returns the proof-of-work solution r carries for room: the
// X-Usher-Pow header, else the room's solution cookie.
func solution(r *http.Request, room *usher.Room) (challenge, n string, ok bool) {
	if v := r.Header.Get(guard.Header); v != "" {
		return guard.SplitSolution(v)
	}
	if c, err := r.Cookie(PoWCookie(room)); err == nil {
		return guard.SplitSolution(c.Value)
	}
	return "", "", false
}

// clearSolution drops a spent solution's cookie from the browser.
func clearSolution(w http.ResponseWriter, m Match) {
	if !m.Solved {
		return
	}
	c := &http.Cookie{Name: PoWCookie(m.Room), Value: "", Path: "/", MaxAge: -1, SameSite: http.SameSiteLaxMode}
	w.Header().Add("Set-Cookie", c.String())
}

// challenge answers a visitor who must solve a proof of work first: the
// challenge page, or its JSON, with the room's queueing status code, never
// cached.
func (g *Gate) challenge(w http.ResponseWriter, r *http.Request, m Match, d usher.Decision) {
	dropBody(w, r)
	set := settings(m, d)
	status := answerStatus(m, set, false)
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	if set.JSONResponseEnabled {
		h.Add("Vary", "Accept")
	}
	h.Add("Vary", "Accept-Language")
	if set.JSONResponseEnabled && server.AcceptsJSON(r) {
		g.writeJSON(w, r, status, guard.Challenge{Value: d.Challenge, Difficulty: d.Difficulty,
			Expires: d.ChallengeExpires}.JSON())
		return
	}
	pd := pageData(r, m, d)
	pd.Challenge, pd.Difficulty, pd.ChallengeCookie = d.Challenge, d.Difficulty, PoWCookie(m.Room)
	g.writePage(w, r, status, web.PageChallenge, pd)
}

// challengeDecision is the decision that answers with ch.
func challengeDecision(sched *usher.Schedule, ch *guard.Challenge) usher.Decision {
	return usher.Decision{Outcome: usher.Challenge, Settings: sched.Settings, Phase: sched.Phase, Event: sched.Event,
		QueueAll: sched.QueueAll, Challenge: ch.Value, Difficulty: ch.Difficulty, ChallengeExpires: ch.Expires,
		RefreshAfter: time.Second}
}
