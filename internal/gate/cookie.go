package gate

import (
	"cmp"
	"encoding/binary"
	"errors"
	"iter"
	"log/slog"
	"net/http"
	"net/netip"
	"net/textproto"
	"strings"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/server"
)

// CookieMaxAge is the Max-Age of ticket cookies when the room's session is
// shorter: long enough for a ticket to survive a browser restart. Whether
// the ticket still holds a place or a session is up to its own times.
const CookieMaxAge = 24 * time.Hour

// openTicket returns the first ticket cookie of m's room in r that opens
// and is bound to r's client, or nil: a missing, forged, foreign or copied
// cookie makes a new visitor, never an error.
func (g *Gate) openTicket(r *http.Request, m *Match) *usher.Ticket {
	room := m.Room
	name := room.CookieName()
	bind := bindingData(room, r, m.ClientIP)
	for value := range cookieValues(r.Header, name) {
		t, err := g.sealer.Open(value, room.ID, name)
		if err == nil && !g.bound(t.Binding, bind) {
			err = errOtherClient
		}
		if err == nil {
			return &t
		}
		g.log.LogAttrs(r.Context(), slog.LevelDebug, "ticket did not open",
			slog.String("request_id", server.RequestIDFrom(r.Context())),
			slog.String("room", room.ID), slog.Any("error", err))
	}
	return nil
}

// cookieValues yields the values of the cookies called name in h's Cookie
// headers, as r.CookiesNamed(name) returns them (surrounding quotes
// removed, values with bytes a cookie may not hold skipped), without
// making a Cookie of every cookie the request carries. Headers with more
// than a few dozen cookies go through net/http itself, which also applies
// its limit on their number.
func cookieValues(h http.Header, name string) iter.Seq[string] {
	return func(yield func(string) bool) {
		lines := h["Cookie"]
		n := 0
		for _, line := range lines {
			n += strings.Count(line, ";") + 1
		}
		if n > 64 {
			for _, c := range (&http.Request{Header: h}).CookiesNamed(name) {
				if !yield(c.Value) {
					return
				}
			}
			return
		}
		for _, line := range lines {
			for part := range strings.SplitSeq(line, ";") {
				k, v, _ := strings.Cut(textproto.TrimString(part), "=")
				if textproto.TrimString(k) != name {
					continue
				}
				if len(v) > 1 && v[0] == '"' && v[len(v)-1] == '"' {
					v = v[1 : len(v)-1]
				}
				if validCookieValue(v) && !yield(v) {
					return
				}
			}
		}
	}
}

// validCookieValue reports whether v holds only bytes a cookie value may
// (net/http's rule: printable ASCII but '"', ';' and '\\').
func validCookieValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < 0x20 || b >= 0x7f || b == '"' || b == ';' || b == '\\' {
			return false
		}
	}
	return true
}

// errOtherClient is why a ticket bound to another client is not taken.
var errOtherClient = errors.New("ticket bound to another client")

// bindingData is what ties the tickets room issues to r's client (at
// address client): the room, the client's address prefix and its user
// agent, as the room's ticket binding says, each after its length; nil
// when the room binds nothing. The sealer keys it (Sealer.Binding), so
// that nobody without the deployment's secret can tell which clients share
// a binding; the binding is sealed in the ticket, and a copied cookie opens
// only for a client with the same prefix and agent.
func bindingData(room *usher.Room, r *http.Request, client netip.Addr) []byte {
	b := &room.TicketBinding
	if !b.On() {
		return nil
	}
	out := binary.AppendUvarint(nil, uint64(len(room.ID)))
	out = append(out, room.ID...)
	if b.ClientPrefix {
		p := usher.ClientPrefix(client, cmp.Or(b.IPv4Prefix, 24), cmp.Or(b.IPv6Prefix, 48))
		raw, _ := p.MarshalBinary()
		out = append(out, 'p')
		out = binary.AppendUvarint(out, uint64(len(raw)))
		out = append(out, raw...)
	}
	if b.UserAgent {
		ua := r.UserAgent()
		out = append(out, 'a')
		out = binary.AppendUvarint(out, uint64(len(ua)))
		out = append(out, ua...)
	}
	return out
}

// bound reports whether a ticket's binding fits the client whose binding
// data is data: both none, or the keyed binding under a key of the ring.
func (g *Gate) bound(binding uint64, data []byte) bool {
	if data == nil {
		return binding == 0
	}
	return g.sealer.Bound(binding, data)
}

// binding is the binding sealed in a ticket for the client whose binding
// data is data (0: none).
func (g *Gate) binding(data []byte) uint64 {
	if data == nil {
		return 0
	}
	return g.sealer.Binding(data)
}

// setTicket adds the Set-Cookie of d's ticket when it changed. A ticket that
// fails to seal is logged and not sent: the visitor is then new again on
// its next request, which is the safe side.
func (g *Gate) setTicket(w http.ResponseWriter, r *http.Request, m Match, d usher.Decision) {
	if m.Room == nil {
		return
	}
	// The ticket's cookie goes first: some proxies pass on only the first
	// Set-Cookie of a forward-auth answer (nginx before 1.23).
	defer clearSolution(w, m)
	if !d.TicketChanged {
		return
	}
	room := m.Room
	tk := d.Ticket
	tk.Binding = g.binding(bindingData(room, r, m.ClientIP))
	v, err := g.sealer.Seal(&tk, room.ID, room.CookieName())
	if err == nil {
		c := ticketCookie(room, r.URL.EscapedPath(), m.Scheme, v)
		if err = c.Valid(); err == nil {
			w.Header().Add("Set-Cookie", c.String())
			return
		}
	}
	g.log.LogAttrs(r.Context(), slog.LevelError, "ticket not sent",
		slog.String("request_id", server.RequestIDFrom(r.Context())),
		slog.String("room", room.ID), slog.Any("error", err))
}

// ticketCookie is the cookie carrying value for room, on a request for
// rawPath (escaped, as the browser sent it) that came over scheme.
//
// HttpOnly always. SameSite from the room: strict, none, else lax ("auto"
// included). Secure: "always", "never", else when scheme is https (TLS, or
// X-Forwarded-Proto from a trusted proxy). Max-Age: CookieMaxAge or the
// session duration, whichever is longer.
func ticketCookie(room *usher.Room, rawPath, scheme, value string) *http.Cookie {
	c := &http.Cookie{
		Name:     room.CookieName(),
		Value:    value,
		Path:     cookiePath(room, rawPath),
		Domain:   room.CookieDomain(),
		MaxAge:   int(max(CookieMaxAge, room.SessionDuration) / time.Second),
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
	}
	switch strings.ToLower(room.CookieAttributes.SameSite) {
	case "strict":
		c.SameSite = http.SameSiteStrictMode
	case "none":
		c.SameSite = http.SameSiteNoneMode
	}
	switch strings.ToLower(room.CookieAttributes.Secure) {
	case "always":
		c.Secure = true
	case "never":
	default:
		c.Secure = scheme == "https"
	}
	return c
}

// cookiePath is room.CookiePath(), except that in a room whose paths are
// case-insensitive a request that reached the room with other letter cases
// gets the prefix as it wrote it: browsers match cookie paths
// case-sensitively, and a cookie they never send back would make the
// visitor new on every request.
func cookiePath(room *usher.Room, rawPath string) string {
	p := room.CookiePath()
	if room.PathCaseSensitive || p == "/" || underPrefix(rawPath, p) {
		return p
	}
	if len(rawPath) >= len(p) && strings.EqualFold(rawPath[:len(p)], p) && underPrefix(rawPath, rawPath[:len(p)]) {
		return rawPath[:len(p)]
	}
	return p
}

// stripCookie removes the cookie called name from the Cookie headers of h,
// keeping every other cookie byte for byte, and drops headers left empty.
func stripCookie(h http.Header, name string) {
	values := h["Cookie"]
	if len(values) == 0 {
		return
	}
	out := values[:0:0]
	for _, v := range values {
		if !strings.Contains(v, name) {
			out = append(out, v)
			continue
		}
		var kept []string
		removed := false
		for part := range strings.SplitSeq(v, ";") {
			k, _, _ := strings.Cut(part, "=")
			if strings.TrimSpace(k) == name {
				removed = true
				continue
			}
			kept = append(kept, strings.TrimLeft(part, " "))
		}
		if !removed {
			out = append(out, v)
		} else if len(kept) > 0 {
			out = append(out, strings.Join(kept, "; "))
		}
	}
	if len(out) == 0 {
		delete(h, "Cookie")
		return
	}
	h["Cookie"] = out
}
