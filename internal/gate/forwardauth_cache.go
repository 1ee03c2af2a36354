package gate

import (
	"net/http"
	"strconv"
	"time"

	"github.com/usherhq/usher"
)

// AuthCacheMax is the longest a proxy may reuse a forward-auth answer
// (AuthCacheHeader): a revoked session, a suspended room or a settings
// change reaches a visitor whose answer a proxy keeps at most this late.
const AuthCacheMax = 5 * time.Second

// AuthCacheHeader is the header of a forward-auth answer that a proxy may
// keep and give again to the very same question, for that many seconds
// (nginx: up to one more, as it counts in whole seconds of its clock):
// the same Cookie header, host, URI, method, client address and
// User-Agent. nginx's proxy_cache reads it natively (it has priority over
// Cache-Control there); the recipes key the cache on those values.
const AuthCacheHeader = "X-Accel-Expires"

// setAuthCache marks an answer that lets an admitted visitor through as
// reusable (AuthCacheHeader) while it stays the answer usher would give:
// only when the ticket did not change (no Set-Cookie: nothing of one
// visitor's can reach another), no store call was pending on it, and only
// until the session is due to renew (so that the next request after that
// reaches usher and is counted as without a cache) or ends, at most
// AuthCacheMax, in whole seconds rounded down, less the second nginx may
// add. Every other answer (new
// visitors, renewals, waiters, bypassed requests, the fail mode) gets
// none and is asked again each time.
func setAuthCache(w http.ResponseWriter, m Match, d usher.Decision) {
	if s := authCacheSeconds(m, d); s > 0 {
		w.Header().Set(AuthCacheHeader, strconv.Itoa(s))
	}
}

// authCacheSeconds is setAuthCache's time, 0 when the answer must not be
// reused.
func authCacheSeconds(m Match, d usher.Decision) int {
	if m.Room == nil || d.Outcome != usher.Admit || d.TicketChanged || d.NewlyAdmitted || d.Degraded || d.Replay {
		return 0
	}
	ses := m.Room.Session(&d.Ticket, m.At)
	if !ses.Valid || !ses.RenewTo.IsZero() {
		return 0
	}
	until := ses.End
	if !d.Settings.DisableSessionRenewal {
		// A request renews the session once now + session_duration passes
		// its end (usher.Room.Session): the answer changes then.
		until = until.Add(-d.Settings.SessionDuration)
	}
	if limit := m.At.Add(AuthCacheMax); limit.Before(until) {
		until = limit
	}
	// nginx keeps an answer of N seconds while its clock's whole second
	// is at most N past the second it got it in: up to N+1 seconds.
	return max(int(until.Sub(m.At)/time.Second)-1, 0)
}
