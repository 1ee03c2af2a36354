package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/usherhq/usher"
	// The package has a type named admission.
	engine "github.com/usherhq/usher/internal/admission"
)

// SimConfig is one simulated run: usher's admission engine on simulated
// time, with no network.
type SimConfig struct {
	// Room is the room the visitors come to. Its waiting answers are read
	// as JSON, whatever json_response_enabled says.
	Room usher.Room
	// Arrivals says when each visitor arrives.
	Arrivals Arrivals
	// Model says how visitors behave.
	Model VisitorModel
	// Seed makes the arrivals, every visitor's draws and the engine's
	// random values repeatable: one seed, one timeline.
	Seed uint64
	// Horizon stops the run this long after its start, whoever is still
	// there (zero: 24 hours of simulated time).
	Horizon time.Duration
	// Store holds the room's counters. It is required and should be new
	// and in memory (the embedded store without a path): the run's
	// simulated clock starts at Start, so a store that saw other times
	// would mix them up.
	Store usher.Store
	// Tick, when positive, makes sessions' active cells outlive them by
	// Tick, as nodes on a shared store do (the engine's CellSlack, which
	// covers the clock difference between nodes). Zero counts them exactly,
	// as usher does with the embedded store.
	Tick time.Duration
	// Start is the simulated time of offset zero of the arrival curve
	// (zero: 2026-01-01 00:00:00 UTC), kept to the millisecond. Events of
	// Room are placed against it.
	Start time.Time
	// Compact keeps, of each visitor's check-ins, only what Report reads:
	// the first, the first with a known wait, and the latest. A large run
	// then needs a fraction of the memory and time.
	Compact bool
	// Progress, when not nil, receives the run's progress (Elapsed in
	// simulated time) about every ProgressEvery of real time (zero:
	// DefaultProgressEvery) and once at the end (Progress.Done), on the
	// goroutine that called Simulate.
	Progress func(Progress)
	// ProgressEvery is how often Progress is called.
	ProgressEvery time.Duration
	// Origin, when set, simulates the origin the admitted visitors'
	// requests reach, and the room's autopilot (when it has one) governs
	// the limits by that origin's health on the simulated clock. The
	// timeline's Origin then holds the origin's figures.
	Origin OriginModel
	// Aggregate parks far-back waiters: their check-ins that provably
	// change nothing but their own waiting cell are applied in bulk (see
	// simulate_agg.go), which makes a large crowd many times faster. The
	// room must pass AggregateOK. The timeline's Aggregate then says what
	// it did. The parked check-ins are not in the visitors' CheckIns
	// (Report reads a visitor's first check-in and its latest, which are).
	Aggregate bool
	// Prior, when positive, is the factor the room learned from an
	// earlier event (admission.Options.Prior): the line's cold first
	// pages scale the limits' forecast by it. The timeline's Learned says
	// what this run teaches the next, whether or not a prior was given.
	Prior float64
	// Load, when not nil, models the Redis load the run implies (see
	// LoadModel); the timeline's Load then holds it. In aggregate mode it
	// parks only check-ins that are far back by the Redis store's margin
	// too, which makes the run slower.
	Load *LoadModel
}

// defaultSimStart is the simulated start of a run whose SimConfig.Start
// is zero.
func defaultSimStart() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// Simulate runs cfg's visitors through the admission engine that usher
// runs in production (admission.Engine over cfg.Store), on simulated time,
// and returns what they saw, as Run would have recorded it with no network
// latency (every request's sending time is its answer's time). The
// simulated clock ticks in milliseconds.
//
// The visitors do what Run's do, and draw from the same per-visitor
// random streams, so one seed gives the same visitors in both: a visitor
// arrives at its offset; a waiting answer is a check-in, and the visitor
// comes back refreshIntervalSeconds later (the decision's refresh rounded
// up to the whole second, as the gate writes it), unless it is an
// abandoner whose patience (from its arrival) runs out first: it then
// leaves silently when it does. An admitted visitor browses, a request
// every RequestEvery until Browse has elapsed since its admission, then
// leaves; told to wait while browsing, it is requeued and leaves. A
// rejected visitor (queueing method reject) sees an error and tries again
// after 1 s, giving up after 5 in a row. Tickets go from one request to the
// next as the cookie would carry them (times to the millisecond), without
// sealing.
//
// The run ends when every visitor has left, at the horizon, or when ctx
// ends; it then returns the timeline so far, with ctx's error in the last
// case. Simulate fails before starting only on a bad SimConfig; an error
// from the store stops the run and is returned with the timeline so far.
func Simulate(ctx context.Context, cfg SimConfig) (*Timeline, error) {
	if cfg.Store == nil {
		return nil, errors.New("bench: simulate: no store")
	}
	if cfg.Arrivals.Len() == 0 {
		return nil, errors.New("bench: simulate: no arrivals")
	}
	if err := cfg.Model.Validate(); err != nil {
		return nil, fmt.Errorf("bench: simulate: %w", err)
	}
	if err := cfg.Origin.Validate(); err != nil {
		return nil, fmt.Errorf("bench: simulate: %w", err)
	}
	if cfg.Aggregate {
		if err := AggregateOK(&cfg.Room, cfg.Origin); err != nil {
			return nil, fmt.Errorf("bench: simulate: aggregate mode: %w", err)
		}
	}
	if cfg.Load != nil {
		if err := cfg.Load.Validate(); err != nil {
			return nil, fmt.Errorf("bench: simulate: %w", err)
		}
	}
	if cfg.Horizon < 0 || cfg.Tick < 0 {
		return nil, fmt.Errorf("bench: simulate: negative horizon %v or tick %v", cfg.Horizon, cfg.Tick)
	}
	s := newSim(cfg)
	err := s.run(ctx)
	return s.tl, err
}

// RoomLimits returns the limits a report measures room against: its own
// settings (not its events').
func RoomLimits(room *usher.Room) Limits {
	return Limits{
		TotalActiveUsers:      room.TotalActiveUsers,
		NewUsersPerMinute:     room.NewUsersPerMinute,
		SessionDuration:       room.SessionDuration,
		RefreshInterval:       room.RefreshInterval,
		DisableSessionRenewal: room.DisableSessionRenewal,
	}
}

// What a simulated visitor does next.
type simAct uint8

const (
	simNone    simAct = iota
	simArrive         // the first request
	simRequest        // a check-in, a retry, or a browsing visitor's request
	simAbandon        // patience ran out while waiting
	simLeave          // browsing is over
)

// The live visitor's defaults (Config.RetryDelay and Config.MaxErrors).
const (
	simRetryDelay = time.Second
	simMaxErrors  = 5
)

// simVisitor is one virtual visitor's state between its actions.
type simVisitor struct {
	rec      *Visitor
	rng      *rand.Rand
	patience time.Duration // zero: never abandons
	deadline time.Duration // arrival + patience
	until    time.Duration // end of browsing
	errs     int
	arrived  bool
	browsing bool
	// requeued: told to wait while browsing (its session had ended), it
	// waits in line again until it is admitted again or until is past.
	requeued bool
	held     bool          // this request was held (Engine.Hold) once already
	sent     time.Duration // when the request held was sent
	has      bool          // ticket is set
	queued   bool          // waits (for the progress counts)
	ticket   usher.Ticket
	// parked is the time of the last check-in applied in bulk, when the
	// visitor's next action follows it (aggregate mode); parkPos is its
	// place when it was parked.
	parked  time.Duration
	parkPos int64
}

// sim is one simulated run in progress.
type sim struct {
	cfg     SimConfig
	learn   *simLearn // what the run teaches the room's next event
	room    usher.Room
	eng     *engine.Engine
	start   time.Time
	horizon time.Duration
	tl      *Timeline
	offsets []time.Duration // arrivals, to the millisecond
	vs      []simVisitor
	rec     *simRecorder
	seq     uint64
	sink    int
	// turned is what a rejected visitor sees (see classify).
	turnedKind, turnedDetail string
	turnedStatus             int
	// tally counts the visitors by state; reported is when Progress was
	// last called (real clock).
	tally    tally
	reported time.Time
	// origin is the simulated origin (nil: none).
	origin *simOrigin
	// agg is aggregate mode's state (nil: off); decisions counts the
	// engine's decisions.
	agg       *simAgg
	decisions int64
	// load counts the store calls for the load model (nil: off).
	load *loadCounter
}

func newSim(cfg SimConfig) *sim {
	s := &sim{
		cfg:     cfg,
		room:    cfg.Room,
		start:   cfg.Start,
		horizon: cfg.Horizon,
	}
	if s.start.IsZero() {
		s.start = defaultSimStart()
	}
	s.start = s.start.Truncate(time.Millisecond)
	if s.horizon == 0 {
		s.horizon = 24 * time.Hour
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x51_6d_75_1a_7e))
	// The store answers at once on the simulated clock: the engine's
	// measure of a store call's time (Options.Now) reads a clock that
	// stands still rather than the real one, which cost a fortieth of a
	// large run and changed nothing (an answer under half a second late
	// is not corrected for).
	opts := engine.Options{Rand: rng.Uint64, CellSlack: cfg.Tick, Now: func() time.Time { return time.Time{} }}
	if f := cfg.Prior; f > 0 {
		opts.Prior = func(string) (float64, bool) { return f, true }
	}
	s.learn = &simLearn{}
	opts.Observer = s.learn
	if cfg.Origin.On() {
		s.origin = newSimOrigin(cfg.Origin, cfg.Seed, &s.room, s.start)
		if s.origin.pilot != nil {
			opts.Limiter = s.origin.pilot
		}
	}
	store := cfg.Store
	if cfg.Load != nil {
		s.load = newLoadCounter(*cfg.Load, s.start, s.horizon)
		store = loadStore{Store: store, c: s.load}
	}
	s.eng = engine.New(store, opts)
	if s.origin != nil && s.origin.pilot != nil {
		s.origin.pilot.Status = s.eng.Status
	}
	s.offsets = cfg.Arrivals.Offsets(cfg.Seed)
	s.tl = &Timeline{Start: s.start, Visitors: make([]Visitor, len(s.offsets))}
	s.vs = make([]simVisitor, len(s.offsets))
	width := len(strconv.Itoa(len(s.offsets)))
	for i, off := range s.offsets {
		v := &s.tl.Visitors[i]
		v.ID = "v" + pad(i+1, width)
		v.Scheduled = off
		s.offsets[i] = ceilMS(off)
		s.vs[i].rec = v
	}
	s.rec = newSimRecorder(s.tl.Visitors, s.start, s.cfg.Compact)
	if cfg.Aggregate {
		s.agg = newSimAgg(s.horizon)
	}
	// The gate answers a rejected visitor with the HTML reject page.
	s.turnedStatus = s.room.QueueingStatusCode
	if s.turnedStatus == 0 {
		s.turnedStatus = 200
	}
	if s.turnedStatus == 200 {
		s.turnedKind = ErrUnexpected
		s.turnedDetail = "neither the origin nor a JSON waiting answer: text/html; charset=utf-8"
	} else {
		s.turnedKind, s.turnedDetail = ErrStatus, "reject page"
	}
	return s
}

// pad writes n with leading zeros to width digits, as Run's IDs.
func pad(n, width int) string {
	s := strconv.Itoa(n)
	for len(s) < width {
		s = "0" + s
	}
	return s
}

func (s *sim) at(d time.Duration) time.Time { return s.start.Add(d) }

// run processes the visitors' actions in time order: at each simulated
// millisecond, the actions due in the order they were scheduled, then the
// arrivals.
func (s *sim) run(ctx context.Context) error {
	var last time.Duration
	next := 0 // next arrival
	var ag simAgenda
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return s.finish(last, true, err)
			}
			s.report(last, false)
		}
		ev, src, ok := ag.peek()
		switch {
		case next < len(s.offsets) && (!ok || s.offsets[next] < ev.at):
			ev = simEvent{at: s.offsets[next], i: int32(next), act: simArrive}
			next++
		case ok:
			ag.pop(src)
			if src >= 0 {
				s.touch(&ag.fifos[src])
			}
		default:
			return s.finish(last, false, nil)
		}
		if ev.at > s.horizon {
			return s.finish(s.horizon, true, nil)
		}
		now := ev.at
		last = now
		if s.origin != nil {
			s.origin.tick(ctx, s, now)
		}
		nx, err := s.step(ctx, ev, now)
		if err != nil {
			return s.finish(now, true, err)
		}
		if s.load != nil {
			s.load.sec(s.at(now)).waiting = int32(s.tally.waiting.Load())
		}
		if nx.act != simNone {
			s.seq++
			ag.push(simEvent{at: nx.at, seq: s.seq, i: ev.i, act: nx.act}, nx.fixed, nx.at-now)
		}
	}
}

// finish closes the timeline at end and returns err.
func (s *sim) finish(end time.Duration, horizon bool, err error) error {
	s.tl.End = s.at(end)
	s.tl.Horizon = horizon
	if s.origin != nil {
		s.tl.Origin = s.origin.finish(s.cfg.Seed)
	}
	if s.agg != nil {
		st := s.agg.stats
		st.Decisions = s.decisions
		s.tl.Aggregate = &st
	}
	s.tl.Learned = s.learn.stats(s.cfg.Prior)
	if s.load != nil {
		s.tl.Load = s.load.stats()
	}
	s.rec.close()
	s.report(end, true)
	return err
}

// report calls cfg.Progress when ProgressEvery has passed since the last
// call, and always when done.
func (s *sim) report(now time.Duration, done bool) {
	if s.cfg.Progress == nil {
		return
	}
	if s.reported.IsZero() {
		s.reported = time.Now()
	}
	if !done && time.Since(s.reported) < orDefault(s.cfg.ProgressEvery, DefaultProgressEvery) {
		return
	}
	s.reported = time.Now()
	s.cfg.Progress(s.tally.progress(now, len(s.vs), done))
}

// queue counts v in (true) or out of (false) the line.
func (s *sim) queue(v *simVisitor, in bool) {
	if v.queued == in {
		return
	}
	v.queued = in
	if in {
		s.tally.waiting.Add(1)
	} else {
		s.tally.waiting.Add(-1)
	}
}

// arrive records v's first answer at t.
func (s *sim) arrive(v *simVisitor, t time.Time) {
	if !v.arrived {
		v.arrived = true
		v.rec.Arrival, v.rec.ArrivalAck = t, t
		s.tally.arrived.Add(1)
	}
}

// ceilMS rounds d up to the whole millisecond. The simulated clock ticks in
// milliseconds, the resolution of the ticket's times, so that the
// report's arithmetic on the visitors' times is usher's on the tickets'.
func ceilMS(d time.Duration) time.Duration {
	return (d + time.Millisecond - 1) / time.Millisecond * time.Millisecond
}

// step does ev at now and returns the visitor's next action (simNone:
// none), to the millisecond.
func (s *sim) step(ctx context.Context, ev simEvent, now time.Duration) (simNext, error) {
	v := &s.vs[ev.i]
	rec := v.rec
	switch ev.act {
	case simArrive:
		v.rng = rand.New(rand.NewPCG(s.cfg.Seed, 0x9e37_79b9_7f4a_7c15^uint64(ev.i)))
		// As runner.newVisitor, in the same order of draws.
		if m := &s.cfg.Model; m.AbandonFraction > 0 && v.rng.Float64() < m.AbandonFraction {
			v.patience = max(m.Patience.Sample(v.rng), time.Millisecond)
			v.deadline = now + v.patience
			if s.agg != nil {
				s.agg.addDeadline(v.deadline)
			}
		}
	case simAbandon:
		if v.parked > 0 {
			// Its latest check-in was applied in bulk: recorded at its time.
			s.rec.add(simCheckIn{at: v.parked, position: v.parkPos, i: ev.i, eta: -1,
				refresh: int32(v.ticket.NextCheckIn.Sub(v.ticket.CountedAt) / time.Second)})
			v.parked = 0
		}
		t := s.at(now)
		rec.Abandoned, rec.Left = t, t
		s.queue(v, false)
		s.tally.left.Add(1)
		s.rec.add(simCheckIn{i: ev.i, eta: simDone})
		return simNext{}, nil
	case simLeave:
		rec.Left = s.at(now)
		s.tally.left.Add(1)
		return simNext{}, nil
	}
	v.parked = 0
	t := s.at(now)
	var tk *usher.Ticket
	if v.has {
		tk = &v.ticket
	}
	sent := now // when the request was sent
	if v.held {
		v.held = false
		sent = v.sent
	} else if tk != nil && !v.browsing {
		// As the gate: a near-front check-in that cannot go in before the
		// next whole second is held to it.
		if h := s.eng.Hold(&s.room, tk, t); h > 0 {
			v.held, v.sent = true, now
			return simNext{at: now + ceilMS(h), act: simRequest}, nil
		}
	}
	d, err := s.eng.Decide(ctx, &s.room, usher.Visit{Ticket: tk, Now: t})
	s.decisions++
	if err != nil {
		return simNext{}, fmt.Errorf("bench: simulate: visitor %s at %v: %w", rec.ID, now, err)
	}
	if d.TicketChanged {
		v.ticket, v.has = d.Ticket, true
		cookieTimes(&v.ticket)
	}
	if d.Outcome != usher.Wait && d.Outcome != usher.Admit && d.Outcome != usher.Pass {
		// The reject page: an error, as Run's visitors see it.
		s.arrive(v, t)
		rec.Errors = append(rec.Errors, RequestError{At: t, Kind: s.turnedKind, Status: s.turnedStatus, Detail: s.turnedDetail})
		if v.errs++; v.errs >= simMaxErrors {
			rec.GaveUp, rec.Left = true, t
			s.queue(v, false)
			s.tally.left.Add(1)
			s.rec.add(simCheckIn{i: ev.i, eta: simDone})
			return simNext{}, nil
		}
		if v.browsing {
			return s.pause(v, now), nil
		}
		return s.wait(v, now, simRetryDelay), nil
	}
	if v.browsing || v.requeued {
		if d.Outcome == usher.Wait {
			// Its session has ended (invariant 7): usher took it for a new
			// visitor and queued it. It waits in line again (visitor.browse).
			if v.browsing {
				rec.Requeued++
				if rec.RequeuedAt.IsZero() {
					rec.RequeuedAt = t
				}
				rec.Requeues = append(rec.Requeues, t)
			}
			v.browsing, v.requeued = false, true
			v.errs = 0
			return s.wait(v, now, time.Duration(refreshSeconds(d.RefreshAfter, s.room.RefreshInterval))*time.Second), nil
		}
		// The origin's answer: a renewal, or after the session ended an
		// admission anew (Report tells them apart as usher does).
		rec.addRequest(s.at(sent), t)
		if s.origin != nil {
			s.origin.serve(now)
		}
		v.browsing, v.requeued = true, false
		v.errs = 0
		return s.pause(v, now), nil
	}
	s.arrive(v, t)
	v.errs = 0
	if d.Outcome == usher.Wait {
		s.queue(v, true)
		refresh := refreshSeconds(d.RefreshAfter, s.room.RefreshInterval)
		c := simCheckIn{at: now, position: d.Position, i: ev.i, eta: -1, refresh: int32(min(refresh, math.MaxInt32)),
			held: int32((now - sent) / time.Millisecond)}
		if d.WaitKnown {
			c.eta = int32(min(waitSeconds(d.EstimatedWait), math.MaxInt32))
			if d.WaitHigh > 0 && s.room.QueueingMethod == usher.Random {
				c.low = int32(min(waitSeconds(d.WaitLow), math.MaxInt32))
				c.high = int32(min(waitSeconds(d.WaitHigh), math.MaxInt32))
			}
		}
		s.rec.add(c)
		if s.agg != nil {
			if nx, ok, err := s.park(ctx, v, &d, now, ev.i); err != nil || ok {
				return nx, err
			}
		}
		return s.wait(v, now, time.Duration(refresh)*time.Second), nil
	}
	// The origin's answer: admitted.
	rec.Admitted, rec.AdmittedSent = t, s.at(sent)
	s.queue(v, false)
	s.tally.admitted.Add(1)
	s.rec.add(simCheckIn{i: ev.i, eta: simDone})
	rec.addRequest(s.at(sent), t)
	if s.origin != nil {
		s.origin.serve(now)
	}
	v.browsing = true
	v.until = now + s.cfg.Model.Browse.Sample(v.rng)
	return s.pause(v, now), nil
}

// wait schedules a waiter's next check-in d after now, or its departure
// when its patience runs out first (visitor.wait).
func (s *sim) wait(v *simVisitor, now, d time.Duration) simNext {
	if v.requeued {
		// Back in line after its session: it stays until its browsing
		// time is over.
		if now+d >= v.until {
			return simNext{at: ceilMS(max(v.until, now)), act: simLeave}
		}
		return simNext{at: now + ceilMS(d), act: simRequest, fixed: true}
	}
	if v.patience > 0 && now+d >= v.deadline {
		return simNext{at: ceilMS(max(v.deadline, now)), act: simAbandon}
	}
	return simNext{at: now + ceilMS(d), act: simRequest, fixed: true}
}

// pause schedules a browsing visitor's next request, or its departure
// when browsing ends first (visitor.browse).
func (s *sim) pause(v *simVisitor, now time.Duration) simNext {
	m := &s.cfg.Model
	every := m.RequestEvery.Sample(v.rng)
	if every <= 0 || now+every >= v.until {
		return simNext{at: ceilMS(max(v.until, now)), act: simLeave}
	}
	// A fixed pause (to the millisecond) is a fixed delay: the request
	// goes to the agenda's queue of that delay, in order, rather than to
	// its heap.
	return simNext{at: ceilMS(now + every), act: simRequest, fixed: m.RequestEvery.fixed() && every%time.Millisecond == 0}
}

// cookieTimes keeps t's times and jitter to the millisecond, as the cookie
// codec does between two requests. On the simulated clock they mostly
// are already.
func cookieTimes(t *usher.Ticket) {
	const ms = int(time.Millisecond)
	if t.ArrivedAt.Nanosecond()%ms+t.AdmittedAt.Nanosecond()%ms+t.CountedAt.Nanosecond()%ms+
		t.NextCheckIn.Nanosecond()%ms+t.DrewAt.Nanosecond()%ms != 0 {
		for _, x := range [...]*time.Time{&t.ArrivedAt, &t.AdmittedAt, &t.CountedAt, &t.NextCheckIn, &t.DrewAt} {
			if x.Nanosecond()%ms != 0 {
				*x = time.UnixMilli(x.UnixMilli()).UTC()
			}
		}
	}
	t.Jitter = t.Jitter.Truncate(time.Millisecond)
}

// refreshSeconds is internal/web.RefreshSeconds, which the gate writes as
// refreshIntervalSeconds: after in whole seconds, rounded up; fallback when
// after is not positive, 20 s when neither is; at least 1.
func refreshSeconds(after, fallback time.Duration) int {
	if after <= 0 {
		after = fallback
	}
	if after <= 0 {
		after = 20 * time.Second
	}
	return max(int(math.Ceil(after.Seconds())), 1)
}

// waitMinutes is internal/web.Minutes, which the gate writes as waitTime:
// d in whole minutes, rounded up; 0 when d is not positive.
func waitMinutes(d time.Duration) int64 {
	return int64(math.Ceil(max(d, 0).Minutes()))
}

// waitSeconds is internal/web.Seconds, which the gate writes as
// waitTimeSeconds (and the range's ends): d in whole seconds, rounded up;
// 0 when d is not positive.
func waitSeconds(d time.Duration) int64 {
	return int64(math.Ceil(max(d, 0).Seconds()))
}
