package admission

import (
	"context"
	"sync"
	"time"

	"github.com/usherhq/usher"
)

// maxRevoked bounds the revocations a node keeps in memory to refuse at
// once; beyond it, a revoked ticket is refused at its next renewal (the
// store's record), within one renewal step.
const maxRevoked = 1 << 16

// revoked remembers the visitors whose sessions this node ended, until
// their sessions could have ended anyway.
type revoked struct {
	mu sync.Mutex
	m  map[[8]byte]time.Time
}

func (r *revoked) add(v [8]byte, until, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[[8]byte]time.Time{}
	}
	if len(r.m) >= maxRevoked {
		for k, u := range r.m {
			if !now.Before(u) {
				delete(r.m, k)
			}
		}
		if len(r.m) >= maxRevoked {
			return
		}
	}
	r.m[v] = until
}

func (r *revoked) has(v [8]byte, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	u, ok := r.m[v]
	return ok && now.Before(u)
}

// Revoke ends a visitor's session at once (an origin's "revoke" command):
// its slot is given back in the store, and no ticket of it holds a session
// again: this node refuses them from now on, every node at their next
// renewal (the store's record of the visitor says the session ended). The
// record lives as long as any session of the visitor could. It reports
// whether this call ended the session: a session already ended (revoked
// before, on any node) is left as it is, and the revocation is told
// (the Revoked observation) once.
func (e *Engine) Revoke(ctx context.Context, room *usher.Room, visitor [8]byte, now time.Time) (bool, error) {
	ctx = context.WithoutCancel(ctx)
	s := room.At(now).Settings
	until := usher.SessionUntil(&s, now).Add(time.Duration(e.slackMax.Load()) + 2*time.Second)
	e.revoked.add(visitor, until, now)
	res, err := e.store.Renew(ctx, room.ID, usher.RenewOp{Now: now, Visitor: visitor, End: true,
		Counted: now.Truncate(time.Millisecond), Keep: until.Unix()})
	if err != nil || res.Replay {
		return false, err
	}
	e.observe(room.ID, Observation{What: Revoked, At: now})
	return true, nil
}
