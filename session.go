package usher

import "time"

// Session is the judgement of an admitted ticket at a moment (Room.Session):
// the one answer to whether a ticket holds a session, until when, and
// whether a request now renews it.
type Session struct {
	// Valid reports whether the ticket holds a session now.
	Valid bool
	// End is when the session ends unless renewed: the ticket's Until, cut
	// to AdmittedAt + session_duration while the settings in force disable
	// renewal.
	End time.Time
	// RenewTo, when not zero, says a request now renews the session:
	// SessionUntil(now), SessionHold after now rounded up to the second,
	// the end it gets when its count has no slack (the engine's end with a
	// cell slack is the slack before the count's whole second). Zero: no
	// renewal now (not due yet, renewal disabled, or a session from before
	// the running event's window).
	RenewTo time.Time
}

// RenewStep is about how much later a request must come, after the one
// that last counted a session, to count it again. A session is counted
// until session_duration plus one step, less a second, after the request
// that counted it, rounded up to the second; a request renews it only when
// its own session_duration would end later than that. So a session lasts
// at least session_duration after the visitor's last request and at most
// one step more, and costs at most a store write a step (and a second): a
// sixtieth of the session, from 1 s to 10 s.
func RenewStep(session time.Duration) time.Duration {
	return min(max(session/60, time.Second), 10*time.Second)
}

// SessionUntil is when a session counted at now ends under s: renewable
// sessions get session_duration plus one RenewStep less a second, others
// session_duration; rounded up to the second. The whole second a count is
// rounded up to is the first second of the step: a session of up to a
// minute (a step of 1 s) is counted to the second its last request's
// session_duration ends in, and renewed by a request at most once a
// second, so that it holds no place after it ended.
func SessionUntil(s *Settings, now time.Time) time.Time {
	return CeilSecond(now.Add(SessionHold(s)))
}

// SessionHold is how long after a request that renews it (or the
// admission) a session is counted: session_duration, plus one RenewStep
// less a second when renewals are on.
func SessionHold(s *Settings) time.Duration {
	d := s.SessionDuration
	if !s.DisableSessionRenewal {
		d += RenewStep(d) - time.Second
	}
	return d
}

// Session judges an admitted ticket at now. It is the only place that
// decides whether a ticket holds a session, so that no settings change can
// revive a session that ended or stretch one past what was counted:
//
//   - A session holds until the ticket's Until, the end the store counted
//     it to. Settings that grow (a reload, an event) never revive a ticket
//     whose Until has passed.
//   - While the settings in force disable renewal, the session also ends
//     session_duration after admission (an event that disables renewal
//     ends earlier sessions on its terms). Its count stays to Until: the
//     settings may change back.
//   - A request renews the session (RenewTo) when renewal is on and the
//     session would otherwise end before session_duration after now; never a
//     session admitted before the window (pre-queue or start) of the event
//     running now, so nobody from before an event keeps a place through it
//     by browsing.
//
// A ticket that is not admitted, has no Until, or was admitted in the
// future (beyond a minute of clock skew) holds no session.
func (r *Room) Session(t *Ticket, now time.Time) Session {
	if t == nil || t.State != Admitted || t.AdmittedAt.IsZero() || t.Until.IsZero() ||
		t.AdmittedAt.After(now.Add(time.Minute)) {
		return Session{}
	}
	sched := r.At(now)
	s := &sched.Settings
	end := t.Until
	if s.DisableSessionRenewal {
		if cap := CeilSecond(t.AdmittedAt.Add(s.SessionDuration)); cap.Before(end) {
			end = cap
		}
	}
	ses := Session{Valid: now.Before(end), End: end}
	if !ses.Valid || s.DisableSessionRenewal {
		return ses
	}
	if sched.Event != nil && t.AdmittedAt.Before(sched.Event.WindowStart()) {
		return ses
	}
	if now.Add(s.SessionDuration).After(end) {
		ses.RenewTo = SessionUntil(s, now)
	}
	return ses
}
