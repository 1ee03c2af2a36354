package gate

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
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

// proof is what the engine needs of r's proof of work (usher.Proof): On
// when the gate can issue challenges, and, when r carries a solution,
// the function that verifies and spends it (the *spending then reports
// whether it did; nil when r carries none). The engine asks for it only
// when the decision is about to make a new visitor, whatever made it new
// (no ticket, a ticket whose session ended, a waiting ticket given up, a
// ticket that did not open), and, unless the room asks it of every new
// visitor, only when that visitor would not go in at once (decided in the
// store's atomic step, never from a status read earlier).
func (g *Gate) proof(r *http.Request, m *Match) (usher.Proof, *spending) {
	if g.pow == nil {
		return usher.Proof{}, nil
	}
	c, n, ok := solution(r, m.Room)
	if !ok {
		return usher.Proof{On: true}, nil
	}
	// Only what the spend needs, copied: m itself stays on the stack of
	// every request that brings no solution.
	sp := &spending{g: g, r: r, room: m.Room, at: m.At, ip: m.ClientIP, c: c, n: n}
	return usher.Proof{On: true, Spend: sp.spend}, sp
}

// spending is a solution a request brought, to be spent if the decision
// asks for it.
type spending struct {
	g     *Gate
	r     *http.Request
	room  *usher.Room
	at    time.Time
	ip    netip.Addr
	c, n  string
	spent bool // the decision spent it (good and fresh)
}

// spend verifies the solution and spends it, and reports whether it was
// good and fresh. A solution that does not verify, is spent already, or
// cannot be spent (the set refuses or cannot be reached) earns nothing:
// the visitor is decided as one without a solution (fail closed).
func (sp *spending) spend(ctx context.Context) (bool, error) {
	g := sp.g
	pow := sp.room.At(sp.at).ProofOfWork
	solved, err := g.pow.Verify(sp.c, sp.n, sp.room.ID, powPrefix(sp.ip), pow.Difficulty, sp.at)
	if err == nil {
		var fresh bool
		fresh, err = g.spent.Spend(ctx, sp.room.ID, solved.ID, solved.Until)
		if err == nil && fresh {
			sp.spent = true
			return true, nil
		}
		if err == nil {
			err = errSpent
		}
	}
	g.log.LogAttrs(ctx, slog.LevelDebug, "proof of work refused",
		slog.String("request_id", server.RequestIDFrom(sp.r.Context())),
		slog.String("room", sp.room.ID), slog.Any("error", err))
	return false, nil
}

// errSpent is why a solution already used is refused.
var errSpent = errors.New("proof of work: solution already used")

// challengeFor fills in d, a decision with Outcome Challenge, with a new
// challenge for the client of m, at the difficulty in force.
func (g *Gate) challengeFor(m *Match, d *usher.Decision) error {
	if g.pow == nil {
		return errors.New("proof of work asked, but the gate issues no challenges")
	}
	ch, err := g.pow.Issue(m.Room.ID, powPrefix(m.ClientIP), d.Settings.ProofOfWork.Difficulty, m.At)
	if err != nil {
		return err
	}
	d.Challenge, d.Difficulty, d.ChallengeExpires = ch.Value, ch.Difficulty, ch.Expires
	d.RefreshAfter = time.Second
	return nil
}

// solution returns the proof-of-work solution r carries for room: the
// X-Usher-Pow header, else the room's solution cookie.
func solution(r *http.Request, room *usher.Room) (challenge, n string, ok bool) {
	if v := r.Header.Get(guard.Header); v != "" {
		return guard.SplitSolution(v)
	}
	if !mayHaveCookie(r, guard.Cookie) {
		// Most requests (every admitted visitor's) carry no solution: no
		// cookie parse, no allocation.
		return "", "", false
	}
	if c, err := r.Cookie(PoWCookie(room)); err == nil {
		return guard.SplitSolution(c.Value)
	}
	return "", "", false
}

// mayHaveCookie reports whether r's Cookie headers mention name at all.
func mayHaveCookie(r *http.Request, name string) bool {
	for _, h := range r.Header["Cookie"] {
		if strings.Contains(h, name) {
			return true
		}
	}
	return false
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
