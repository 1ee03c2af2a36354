package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// VisitorModel is how virtual visitors behave. The zero value is a visitor
// who is admitted, makes that one request, and leaves; nobody abandons.
type VisitorModel struct {
	// Browse is how long an admitted visitor stays, from its admission.
	Browse Dist
	// RequestEvery is the pause between an admitted visitor's requests,
	// drawn again for every pause. A pause of zero ends the requests: the
	// visitor stays, silent, until Browse has elapsed.
	RequestEvery Dist
	// AbandonFraction is the share of visitors, from 0 to 1, who give up
	// waiting when their patience runs out.
	AbandonFraction float64
	// Patience is how long an abandoner waits, from its arrival, before it
	// leaves silently, never to return.
	Patience Dist
}

// DefaultVisitorModel is a plausible shopper: stays 30-90 s, a page every
// 5-15 s, and one in five gives up after waiting about two minutes.
func DefaultVisitorModel() VisitorModel {
	return VisitorModel{
		Browse:          Uniform(30*time.Second, 90*time.Second),
		RequestEvery:    Uniform(5*time.Second, 15*time.Second),
		AbandonFraction: 0.2,
		Patience:        Exp(2 * time.Minute),
	}
}

// Validate reports a model that cannot run.
func (m VisitorModel) Validate() error {
	if !(m.AbandonFraction >= 0 && m.AbandonFraction <= 1) {
		return fmt.Errorf("visitor model: abandon fraction %v is not between 0 and 1", m.AbandonFraction)
	}
	return nil
}

// visitor runs one virtual visitor, writing only to its own record.
type visitor struct {
	v      *Visitor
	run    *runner
	client *http.Client
	rng    *rand.Rand
	// patience is zero for visitors who never abandon.
	patience time.Duration
	// deadline is when an abandoner's patience runs out (real clock).
	deadline time.Time
	// queued reports that the visitor waits (for the progress counts).
	queued bool
}

// live runs the visitor from its arrival until it leaves or ctx ends. The
// schedule follows the real clock; the records use run.now.
func (vs *visitor) live(ctx context.Context) {
	if !sleep(ctx, time.Until(vs.run.start.Add(vs.v.Scheduled))) {
		return
	}
	if vs.patience > 0 {
		vs.deadline = time.Now().Add(vs.patience)
	}
	errs := 0
	for {
		a := vs.get(ctx)
		switch a.kind {
		case answerCancelled:
			return
		case answerWaiting:
			vs.arrive(a)
			vs.queue(true)
			errs = 0
			vs.v.CheckIns = append(vs.v.CheckIns, a.checkIn)
			if !vs.wait(ctx, a.checkIn.Refresh) {
				return
			}
		case answerOrigin:
			vs.arrive(a)
			admitted := time.Now()
			vs.v.Admitted, vs.v.AdmittedSent = a.recv, a.sent
			vs.queue(false)
			vs.run.tally.admitted.Add(1)
			vs.v.addRequest(a.sent, a.recv)
			vs.noteOriginError(a)
			vs.browse(ctx, admitted)
			return
		default:
			if a.status != 0 {
				vs.arrive(a)
			}
			vs.fail(a)
			if errs++; errs >= vs.run.maxErrors {
				vs.giveUp()
				return
			}
			if !vs.wait(ctx, vs.run.retryDelay) {
				return
			}
		}
	}
}

// browse makes an admitted visitor's requests until Browse has elapsed
// since admitted (real clock). Told to wait (its session ended during a
// pause longer than the session: usher takes it for a new visitor), it
// waits in line again, checking in as told, until it is admitted again or
// its browsing time is over.
func (vs *visitor) browse(ctx context.Context, admitted time.Time) {
	m := &vs.run.model
	until := admitted.Add(m.Browse.Sample(vs.rng))
	errs := 0
	var pause time.Duration // the next pause while back in line (zero: browsing)
	for {
		every := pause
		if every == 0 {
			every = m.RequestEvery.Sample(vs.rng)
		}
		if every <= 0 || !time.Now().Add(every).Before(until) {
			if sleep(ctx, time.Until(until)) {
				vs.v.Left = vs.run.now()
				vs.run.tally.left.Add(1)
			}
			return
		}
		if !sleep(ctx, every) {
			return
		}
		a := vs.get(ctx)
		switch a.kind {
		case answerCancelled:
			return
		case answerOrigin:
			vs.v.addRequest(a.sent, a.recv)
			vs.noteOriginError(a)
			errs, pause = 0, 0
		case answerWaiting:
			if pause == 0 {
				vs.v.Requeued++
				if vs.v.RequeuedAt.IsZero() {
					vs.v.RequeuedAt = a.recv
				}
				vs.v.Requeues = append(vs.v.Requeues, a.recv)
			}
			errs, pause = 0, max(a.checkIn.Refresh, time.Millisecond)
		default:
			vs.fail(a)
			if errs++; errs >= vs.run.maxErrors {
				vs.giveUp()
				return
			}
			if pause > 0 {
				pause = vs.run.retryDelay
			}
		}
	}
}

// wait sleeps d before the next check-in, unless the visitor's patience
// runs out first: it then leaves when it does. It reports whether the
// visitor is still there.
func (vs *visitor) wait(ctx context.Context, d time.Duration) bool {
	if vs.patience > 0 && !time.Now().Add(d).Before(vs.deadline) {
		if sleep(ctx, time.Until(vs.deadline)) {
			now := vs.run.now()
			vs.v.Abandoned, vs.v.Left = now, now
			vs.queue(false)
			vs.run.tally.left.Add(1)
		}
		return false
	}
	return sleep(ctx, d)
}

// arrive records the visitor's first answered request.
func (vs *visitor) arrive(a answer) {
	if vs.v.Arrival.IsZero() {
		vs.v.Arrival, vs.v.ArrivalAck = a.sent, a.recv
		vs.run.tally.arrived.Add(1)
	}
}

// queue counts the visitor in (true) or out of (false) the line.
func (vs *visitor) queue(in bool) {
	if vs.queued == in {
		return
	}
	vs.queued = in
	if in {
		vs.run.tally.waiting.Add(1)
	} else {
		vs.run.tally.waiting.Add(-1)
	}
}

func (vs *visitor) fail(a answer) {
	vs.v.Errors = append(vs.v.Errors, RequestError{At: a.recv, Kind: a.errKind, Status: a.status, Detail: a.detail})
}

// noteOriginError records an origin answer with a status other than 200.
func (vs *visitor) noteOriginError(a answer) {
	if a.errKind != "" {
		vs.fail(a)
	}
}

func (vs *visitor) giveUp() {
	vs.v.GaveUp = true
	vs.v.Left = vs.run.now()
	vs.queue(false)
	vs.run.tally.left.Add(1)
}

// sleep waits d, or until ctx ends; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
