package autopilot

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/usherhq/usher"
)

// StatusFunc returns a room's live counters (the engine's Status).
type StatusFunc func(ctx context.Context, room *usher.Room, now time.Time) (usher.RoomStats, error)

// Shared is where the nodes of a room pool their health samples and agree
// on one effective figure: the store.
type Shared interface {
	// AddHealth adds one node's counts of second sec to the room's.
	AddHealth(ctx context.Context, room string, sec int64, h usher.Health) error
	// Health returns the sum of every node's counts of second sec (zero
	// counts when none were added).
	Health(ctx context.Context, room string, sec int64) (usher.Health, error)
	// Governor returns the room's figure (Version 0: none yet).
	Governor(ctx context.Context, room string) (usher.GovernorFigure, error)
	// SwapGovernor sets the room's figure to next, as version from+1, when
	// its version is still from (0: none yet), and returns the figure in
	// force after.
	SwapGovernor(ctx context.Context, room string, from int64, next usher.GovernorFigure) (usher.GovernorFigure, error)
}

// Pilot runs the governors of one node's rooms: it keeps a Recorder per
// governed room for the gate (or a prober) to fill, and once a second
// turns the last second's counts into a Sample for the room's Governor.
// It implements the admission engine's Limiter.
type Pilot struct {
	// Status reads a room's counters (waiting, active, admitted).
	Status StatusFunc
	// Shared, when not nil, pools the nodes' samples and figures.
	Shared Shared
	// Logger receives each change with its reason (nil: slog.Default()).
	Logger *slog.Logger
	// OnChange, when not nil, is called with each change (metrics, audit).
	OnChange func(room string, c Change)
	// Client probes health URLs (nil: http.DefaultClient's transport with
	// each probe's timeout).
	Client *http.Client

	rooms atomic.Pointer[map[string]*entry]
	mu    sync.Mutex // SetRooms and Tick
	// kick tells Run that the rooms changed, so that their probers follow
	// at once (made on first use: see kicks).
	kick     chan struct{}
	kickOnce sync.Once
}

// entry is one governed room.
type entry struct {
	room atomic.Pointer[usher.Room]
	gov  *Governor
	rec  Recorder
	prev Snapshot
	// probed counts the health URL's probes, apart from the proxied
	// answers in rec: an event may bring a health URL to a room whose
	// gate records, and the sample is then the probes' alone.
	probed     Recorder
	prevProbed Snapshot
	// allow is the admissions the rate window may hold until the next
	// tick (-1: unknown, unpaced): see pace.
	allow   atomic.Int64
	version int64 // of the shared figure adopted
	probeMu sync.Mutex
	probe   context.CancelFunc
	probeOf probeSettings
}

// probeSettings are what a room's prober runs by: its health URL (empty:
// no prober), the interval and the timeout, defaults filled in.
type probeSettings struct {
	url            string
	every, timeout time.Duration
}

// probeSettingsOf reads a's prober settings; a room whose autopilot is off
// in the settings in force has no prober.
func probeSettingsOf(a *usher.Autopilot) probeSettings {
	if !a.Enabled || a.HealthURL == "" {
		return probeSettings{}
	}
	ps := probeSettings{url: a.HealthURL, every: a.ProbeInterval, timeout: a.ProbeTimeout}
	if ps.every <= 0 {
		ps.every = DefaultProbeInterval
	}
	if ps.timeout <= 0 {
		ps.timeout = DefaultProbeTimeout
	}
	return ps
}

// Governed reports whether autopilot is on for room in its own settings
// or any of its events'.
func Governed(room *usher.Room) bool {
	if room.Autopilot.Enabled {
		return true
	}
	for i := range room.Events {
		if a := room.Events[i].Overrides.Autopilot; a != nil && a.Enabled {
			return true
		}
	}
	return false
}

// SetRooms makes rooms the governed ones (those Governed says): a room
// that stays keeps its governor, baseline and figures; a new one starts at
// its configured limits; one that left is dropped.
func (p *Pilot) SetRooms(rooms []*usher.Room, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.load()
	next := make(map[string]*entry, len(rooms))
	for _, r := range rooms {
		if r == nil || !Governed(r) {
			continue
		}
		s := r.At(now).Settings
		e := old[r.ID]
		if e == nil {
			e = &entry{gov: New(&s)}
			e.allow.Store(-1)
		} else {
			e.gov.Configure(&s)
		}
		e.room.Store(r)
		next[r.ID] = e
	}
	for id, e := range old {
		if next[id] == nil {
			e.stopProbe()
		}
	}
	p.rooms.Store(&next)
	// Run's next step restarts the probers whose settings changed.
	select {
	case p.kicks() <- struct{}{}:
	default:
	}
}

// kicks is the channel SetRooms tells Run on.
func (p *Pilot) kicks() chan struct{} {
	p.kickOnce.Do(func() { p.kick = make(chan struct{}, 1) })
	return p.kick
}

func (p *Pilot) load() map[string]*entry {
	if m := p.rooms.Load(); m != nil {
		return *m
	}
	return nil
}

// Recorder returns the recorder of a governed room whose signal is its
// proxied responses (no health URL), or nil.
func (p *Pilot) Recorder(room string) *Recorder {
	e := p.load()[room]
	if e == nil || e.room.Load().Autopilot.HealthURL != "" {
		return nil
	}
	return &e.rec
}

// Limit sets s's limits to the room's effective figures (admission's
// Limiter): two atomic loads and a map lookup.
func (p *Pilot) Limit(room string, s *usher.Settings) {
	e := p.load()[room]
	if e == nil {
		return
	}
	r, c := e.gov.Limits()
	rr, cr := Bounds(s)
	s.NewUsersPerMinute = rr.Clamp(r)
	if a := e.allow.Load(); a >= 0 {
		s.NewUsersPerMinute = int(min(int64(s.NewUsersPerMinute), max(a, 1)))
	}
	if c > 0 && s.Autopilot.Concurrency {
		s.TotalActiveUsers = cr.Clamp(c)
	}
}

// State returns the governor state of room, if it is governed.
func (p *Pilot) State(room string) (State, bool) {
	e := p.load()[room]
	if e == nil {
		return State{}, false
	}
	return e.gov.State(), true
}

// Run ticks every second until ctx ends, takes the shared figures every
// SyncEvery in between, and probes the health URLs: each room's prober
// follows the settings in force (an event's included) from the next tick,
// and at once when SetRooms changes them.
func (p *Pilot) Run(ctx context.Context) {
	kick := p.kicks()
	p.probes(ctx, time.Now())
	t := time.NewTicker(time.Second)
	defer t.Stop()
	sync := time.NewTicker(SyncEvery)
	defer sync.Stop()
	defer func() {
		for _, e := range p.load() {
			e.stopProbe()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			p.probes(ctx, now)
			p.Tick(ctx, now)
		case <-kick:
			p.probes(ctx, time.Now())
		case <-sync.C:
			p.Sync(ctx)
		}
	}
}

// Tick turns the counts since the last tick into each governed room's
// sample of the second before now, and applies the governor's decision.
func (p *Pilot) Tick(ctx context.Context, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sec := now.Unix() - 1
	for id, e := range p.load() {
		room := e.room.Load()
		sched := room.At(now)
		s := &sched.Settings
		cur := e.rec.Snapshot()
		local := cur.Sub(&e.prev)
		e.prev = cur
		curProbed := e.probed.Snapshot()
		if probeSettingsOf(&s.Autopilot).url != "" {
			// Watched through its health URL: the probes, not the answers.
			local = curProbed.Sub(&e.prevProbed)
		}
		e.prevProbed = curProbed
		if !s.Autopilot.Enabled {
			continue
		}
		e.gov.Configure(s)
		sample := Sample{At: time.Unix(sec, 0)}
		h := local
		if p.Shared != nil {
			if err := p.Shared.AddHealth(ctx, id, sec, usher.Health{Count: local.Count, Errors: local.Errors, Buckets: local.Buckets[:]}); err != nil {
				p.log().Warn("autopilot: sharing health", "room", id, "err", err)
			}
			// The second before: every node has added its counts by now.
			sample.At = time.Unix(sec-1, 0)
			all, err := p.Shared.Health(ctx, id, sec-1)
			if err != nil {
				p.log().Warn("autopilot: reading health", "room", id, "err", err)
				continue
			}
			h = snapshotOf(all)
		}
		sample.Count, sample.Errors = h.Count, h.Errors
		sample.Latency = h.SamplePercentile(float64(ParamsOf(&s.Autopilot).Percentile))
		window := int64(-1)
		if p.Status != nil {
			if st, err := p.Status(ctx, room, now); err == nil {
				sample.Waiting = st.Waiting > 0
				sample.Active, sample.AdmittedLastMinute = st.Active, st.AdmittedLastMinute
				window = st.AdmittedLastMinute
			}
		}
		p.observe(ctx, id, e, sample)
		if window < 0 {
			e.allow.Store(-1)
		} else {
			r, _ := e.gov.Limits()
			e.allow.Store(pace(e.allow.Load(), window, r, s.RefreshInterval))
		}
	}
}

// observe runs one sample through e's governor; with Shared, the room's
// figure is the store's: a node adopts it first, and its own change holds
// only if no other node changed the figure meanwhile.
func (p *Pilot) observe(ctx context.Context, id string, e *entry, sample Sample) {
	if p.Shared != nil {
		p.adopt(ctx, id, e)
	}
	c, ok := e.gov.Observe(sample)
	if !ok {
		if p.Shared != nil && e.version == 0 {
			// No figure for the room yet: this node's is proposed, and
			// the first node's becomes every node's.
			r, cc := e.gov.Limits()
			got, err := p.Shared.SwapGovernor(ctx, id, 0, usher.GovernorFigure{Rate: r, Concurrency: cc, At: sample.At, Reason: "start"})
			if err == nil {
				e.version = got.Version
				e.gov.Adopt(got.Rate, got.Concurrency)
			}
		}
		return
	}
	if p.Shared != nil {
		next := usher.GovernorFigure{Rate: c.ToRate, Concurrency: c.ToConc, At: c.At, Reason: c.Reason}
		got, err := p.Shared.SwapGovernor(ctx, id, e.version, next)
		if err != nil {
			p.log().Warn("autopilot: sharing the figure", "room", id, "err", err)
		} else if got.Version != e.version+1 || got.Rate != c.ToRate || got.Concurrency != c.ToConc {
			// Another node decided first: its figure is the room's.
			e.version = got.Version
			e.gov.AdoptChange(got.Rate, got.Concurrency, got.At)
			return
		} else {
			e.version = got.Version
		}
	}
	p.log().Info("autopilot: "+c.Direction, "room", id, "reason", c.Reason,
		"rate_from", c.FromRate, "rate_to", c.ToRate, "concurrency_from", c.FromConc, "concurrency_to", c.ToConc,
		"latency", c.Latency, "threshold", c.Threshold, "error_rate", c.ErrorRate)
	if p.OnChange != nil {
		p.OnChange(id, c)
	}
}

// adopt takes the room's shared figure when it moved on since e last saw
// it: another node's change counts as this governor's.
func (p *Pilot) adopt(ctx context.Context, id string, e *entry) {
	cur, err := p.Shared.Governor(ctx, id)
	if err != nil || cur.Version <= e.version {
		return
	}
	if e.version == 0 || cur.Reason == "start" {
		e.gov.Adopt(cur.Rate, cur.Concurrency)
	} else {
		e.gov.AdoptChange(cur.Rate, cur.Concurrency, cur.At)
	}
	e.version = cur.Version
}

// Sync takes every governed room's shared figure (with Shared), so that
// another node's change is in force here within the time between syncs.
func (p *Pilot) Sync(ctx context.Context) {
	if p.Shared == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, e := range p.load() {
		p.adopt(ctx, id, e)
	}
}

// pace returns the admissions the rate window may hold until the next
// tick, for a governed rate of rate a minute, the window holding window
// admissions now and having been allowed prev at the last tick (-1:
// none). The rate is a sliding 60 s window, so a long line would take a
// minute's budget in its first second and nothing in the next 59: a wave
// of sessions that loads the origin all at once, then leaves it idle.
// Paced, the window may grow by a second's share of the rate a tick (at
// least one); an allowance left unused (the visitors at the front of the
// line check in only every refresh interval) carries over, up to the
// shares of a refresh interval (at least 2 s), so that the pace is kept.
// A step up thus adds its share a second, not all at once.
func pace(prev, window int64, rate int, refresh time.Duration) int64 {
	share := max(1, (int64(rate)+59)/60)
	depth := share * max(2, int64((refresh+time.Second-1)/time.Second))
	unused := int64(0)
	if prev >= 0 {
		unused = max(0, prev-window)
	}
	return min(int64(rate), window+min(depth, unused+share))
}

// SyncEvery is how often Run takes the shared figures between ticks.
const SyncEvery = 250 * time.Millisecond

func snapshotOf(h usher.Health) Snapshot {
	s := Snapshot{Count: h.Count, Errors: h.Errors}
	copy(s.Buckets[:], h.Buckets)
	return s
}

func (p *Pilot) log() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.Default()
}

// probes starts a prober for each governed room with a health URL in the
// settings in force at now (an event's, as the governor reads them),
// restarts those whose URL, interval or timeout changed, and stops those
// of rooms that no longer have one.
func (p *Pilot) probes(ctx context.Context, now time.Time) {
	for _, e := range p.load() {
		sched := e.room.Load().At(now)
		ps := probeSettingsOf(&sched.Settings.Autopilot)
		e.probeMu.Lock()
		if e.probeOf != ps {
			if e.probe != nil {
				e.probe()
				e.probe = nil
			}
			e.probeOf = ps
			if ps.url != "" {
				pctx, cancel := context.WithCancel(ctx)
				e.probe = cancel
				go p.probe(pctx, &e.probed, ps)
			}
		}
		e.probeMu.Unlock()
	}
}

func (e *entry) stopProbe() {
	e.probeMu.Lock()
	defer e.probeMu.Unlock()
	if e.probe != nil {
		e.probe()
		e.probe = nil
	}
	e.probeOf = probeSettings{}
}

// probe requests ps.url every ps.every until ctx ends, recording each
// probe's latency; a probe that fails, takes longer than ps.timeout or
// answers 5xx is an error.
func (p *Pilot) probe(ctx context.Context, rec *Recorder, ps probeSettings) {
	every, timeout := ps.every, ps.timeout
	client := p.Client
	if client == nil {
		client = &http.Client{}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, timeout)
		start := time.Now()
		failed := true
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, ps.url, nil)
		if err == nil {
			req.Header.Set("User-Agent", "usher-autopilot")
			if resp, err := client.Do(req); err == nil {
				_ = resp.Body.Close()
				failed = resp.StatusCode >= 500
			}
		}
		d := time.Since(start)
		cancel()
		if ctx.Err() != nil {
			return
		}
		rec.Record(d, failed)
	}
}

// States returns the state of every governed room, by room id.
func (p *Pilot) States() map[string]State {
	m := p.load()
	out := make(map[string]State, len(m))
	for id, e := range m {
		out[id] = e.gov.State()
	}
	return out
}
