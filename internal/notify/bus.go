package notify

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults and bounds of the bus.
const (
	// DefaultMaxQueue is a webhook's queue when its config sets none.
	DefaultMaxQueue = 1000
	// DefaultTimeout bounds one delivery attempt when the config sets
	// none.
	DefaultTimeout = 5 * time.Second
	// DefaultMaxAttempts is how many times an event is tried before it is
	// given up.
	DefaultMaxAttempts = 6
	// DefaultBackoff and DefaultMaxBackoff shape the wait before a retry:
	// DefaultBackoff doubled per attempt, at most DefaultMaxBackoff, of
	// which a random half is taken off (jitter).
	DefaultBackoff    = time.Second
	DefaultMaxBackoff = time.Minute
	// MaxResponseBody is how much of a receiver's answer is read.
	MaxResponseBody = 64 << 10
)

// WebhookConfig is one webhook, as the bus runs it.
type WebhookConfig struct {
	// Room is the room whose events it gets (and the node's events).
	Room string
	// Name names it in metrics and logs; unique in its room.
	Name string
	// URL receives the events, POSTed as JSON.
	URL string
	// Secret signs each delivery (Usher-Signature).
	Secret []byte
	// Events are the types it wants (MatchType patterns); empty: every
	// room event. Visitor events must be named and need VisitorSample.
	Events []string
	// VisitorSample is the share of per-visitor events it gets, 0 to 1.
	VisitorSample float64
	// Timeout bounds one attempt (zero: DefaultTimeout).
	Timeout time.Duration
	// MaxQueue bounds the events waiting for it (zero: DefaultMaxQueue).
	MaxQueue int
}

func (c *WebhookConfig) equal(o *WebhookConfig) bool {
	return c.Room == o.Room && c.Name == o.Name && c.URL == o.URL && string(c.Secret) == string(o.Secret) &&
		slices.Equal(c.Events, o.Events) && c.VisitorSample == o.VisitorSample && c.Timeout == o.Timeout && c.MaxQueue == o.MaxQueue
}

// wants reports whether the webhook wants ev, published with visitor
// sample p: its room's (or the node's), a type it names, and for a
// visitor event, its share of the sample drawn.
func (c *WebhookConfig) wants(ev *Event, p float64) bool {
	if ev.Room != "" && ev.Room != c.Room {
		return false
	}
	if !matchAny(c.Events, ev.Type) {
		return false
	}
	if VisitorType(ev.Type) {
		return c.VisitorSample > 0 && (c.VisitorSample >= p || rand.Float64()*p < c.VisitorSample)
	}
	return true
}

// Options configure a Bus. The zero value is usable.
type Options struct {
	// Transport carries deliveries (nil: one as http.DefaultTransport
	// that refuses the addresses ForbiddenTarget names).
	// Redirects are never followed.
	Transport http.RoundTripper
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Logger receives delivery failures and drops (nil: slog.Default()).
	Logger *slog.Logger
	// MaxAttempts, Backoff and MaxBackoff shape retries (zero: the
	// defaults).
	MaxAttempts         int
	Backoff, MaxBackoff time.Duration
	// UserAgent is sent with deliveries (empty: "usher-webhook").
	UserAgent string
	// Heartbeat is how often an idle stream gets a comment line (zero:
	// DefaultHeartbeat).
	Heartbeat time.Duration
}

// Bus delivers published events to webhooks and stream subscribers. It is
// safe for concurrent use. Build it with New; Close stops it.
type Bus struct {
	opts   Options
	client *http.Client
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	hooks  map[string]*webhook // by room + "\x00" + name
	subs   map[*subscriber]struct{}
	closed bool
	// noStreams refuses new streams (EndStreams).
	noStreams bool
	snap      atomic.Pointer[snapshot]

	published      atomic.Int64
	streamDropped  atomic.Int64
	latency        *prometheus.HistogramVec
	streamCapacity int
}

// snapshot is what Publish reads: the consumers in force and, by room,
// the visitor sample to draw.
type snapshot struct {
	hooks []*webhook
	subs  []*subscriber
	// visitor is, by room, the largest share of visitor events any
	// consumer wants; all applies to every room (stream subscribers
	// without a room filter).
	visitor map[string]float64
	all     float64
}

func (s *snapshot) visitorRate(room string) float64 {
	return max(s.visitor[room], s.all)
}

// New returns a running bus without webhooks.
func New(opts Options) *Bus {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "usher-webhook"
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	tr := opts.Transport
	if tr == nil {
		tr = guardedTransport()
	}
	b := &Bus{
		opts: opts,
		client: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
		log:            opts.Logger,
		hooks:          map[string]*webhook{},
		subs:           map[*subscriber]struct{}{},
		streamCapacity: DefaultStreamBuffer,
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "usher_webhook_delivery_seconds",
		Help:    "Time from an event's publication to its delivery (queueing and retries included), by webhook.",
		Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
	}, []string{"room", "webhook"})
	b.snap.Store(&snapshot{})
	return b
}

// Register adds the bus's metrics to r.
func (b *Bus) Register(r prometheus.Registerer) {
	r.MustRegister(b.latency, &collector{b: b})
}

// SetWebhooks puts cfgs in force: a webhook whose config did not change
// keeps its queue; one whose config changed takes the new one from its
// next delivery (a new max_queue starts a new queue, and the events in the
// old one are dropped and counted); one that is gone stops, its queue
// dropped and counted.
func (b *Bus) SetWebhooks(cfgs []WebhookConfig) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	next := make(map[string]*webhook, len(cfgs))
	for i := range cfgs {
		c := cfgs[i]
		c.Events = slices.Clone(c.Events)
		if c.Timeout <= 0 {
			c.Timeout = DefaultTimeout
		}
		if c.MaxQueue <= 0 {
			c.MaxQueue = DefaultMaxQueue
		}
		k := c.Room + "\x00" + c.Name
		if h := b.hooks[k]; h != nil && cap(h.queue) == c.MaxQueue {
			if !h.config().equal(&c) {
				h.cfg.Store(&c)
			}
			next[k] = h
			delete(b.hooks, k)
			continue
		}
		next[k] = b.start(&c)
	}
	for _, h := range b.hooks {
		h.stop()
	}
	b.hooks = next
	b.refresh()
}

// refresh rebuilds the snapshot Publish reads; b.mu is held.
func (b *Bus) refresh() {
	s := &snapshot{visitor: map[string]float64{}}
	for _, h := range b.hooks {
		s.hooks = append(s.hooks, h)
		c := h.config()
		if c.VisitorSample > 0 && slices.ContainsFunc(types, func(t string) bool { return VisitorType(t) && matchAny(c.Events, t) }) {
			s.visitor[c.Room] = max(s.visitor[c.Room], c.VisitorSample)
		}
	}
	slices.SortFunc(s.hooks, func(x, y *webhook) int {
		a, b := x.config(), y.config()
		if a.Room != b.Room {
			return cmpString(a.Room, b.Room)
		}
		return cmpString(a.Name, b.Name)
	})
	for sub := range b.subs {
		s.subs = append(s.subs, sub)
		if sub.sample <= 0 || !slices.ContainsFunc(types, func(t string) bool { return VisitorType(t) && matchAny(sub.types, t) }) {
			continue
		}
		if len(sub.rooms) == 0 {
			s.all = max(s.all, sub.sample)
		}
		for _, r := range sub.rooms {
			s.visitor[r] = max(s.visitor[r], sub.sample)
		}
	}
	b.snap.Store(s)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// SampleVisitor reports whether a per-visitor event of room should be
// built and published now: false at once, without allocating, when no
// webhook or subscriber wants the room's visitor events; else true with
// the largest sample any of them asked for. Publish then hands each
// consumer its own share.
func (b *Bus) SampleVisitor(room string) bool {
	s := b.snap.Load()
	if len(s.visitor) == 0 && s.all == 0 {
		return false
	}
	p := s.visitorRate(room)
	return p > 0 && (p >= 1 || rand.Float64() < p)
}

// WantsVisitors reports whether any consumer wants per-visitor events of
// any room (one atomic load).
func (b *Bus) WantsVisitors() bool {
	s := b.snap.Load()
	return len(s.visitor) > 0 || s.all > 0
}

// Listening reports whether anything would receive a room event now: a
// webhook or a stream subscriber.
func (b *Bus) Listening() bool {
	s := b.snap.Load()
	return len(s.hooks) > 0 || len(s.subs) > 0
}

// Publish hands ev to every webhook and subscriber that wants it, without
// blocking: a full webhook queue drops it (counted), a subscriber that
// cannot take it is cut off (counted). It sets ev.ID (when empty or not
// 1 to 64 of A-Z, a-z, 0-9, '_', '-') and ev.Time (when zero). An event
// of a type not in Types is logged and dropped. A per-visitor event should be published only when
// SampleVisitor said so.
func (b *Bus) Publish(ev Event) {
	s := b.snap.Load()
	if len(s.hooks) == 0 && len(s.subs) == 0 {
		return
	}
	if !KnownType(ev.Type) {
		b.log.Error("event of an unknown type not published (add it to notify's types)", "type", ev.Type)
		return
	}
	if !safeID(ev.ID) {
		ev.ID = newID() // an id goes on a line of the stream as it is
	}
	if ev.Time.IsZero() {
		ev.Time = b.opts.Now()
	}
	ev.Time = ev.Time.UTC()
	p := 1.0
	if VisitorType(ev.Type) {
		if p = s.visitorRate(ev.Room); p <= 0 {
			return
		}
	}
	var body []byte
	encode := func() bool {
		if body != nil {
			return true
		}
		var err error
		if body, err = json.Marshal(ev); err != nil {
			b.log.Error("webhook event not encoded", "type", ev.Type, "room", ev.Room, "err", err)
			return false
		}
		return true
	}
	b.published.Add(1)
	for _, h := range s.hooks {
		if h.config().wants(&ev, p) {
			if !encode() {
				return
			}
			h.enqueue(item{id: ev.ID, typ: ev.Type, room: ev.Room, body: body, at: b.opts.Now()})
		}
	}
	for _, sub := range s.subs {
		if sub.wants(&ev, p) {
			if !encode() {
				return
			}
			sub.send(b, &streamItem{id: ev.ID, typ: ev.Type, body: body})
		}
	}
}

// safeID reports whether id is 1 to 64 of A-Z, a-z, 0-9, '_' and '-'.
func safeID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// EndStreams ends every open event stream (usher is stopping: the admin
// listener's graceful shutdown would otherwise wait for them); new ones
// are refused. Webhooks go on.
func (b *Bus) EndStreams() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.noStreams = true
	for sub := range b.subs {
		sub.end()
	}
	clear(b.subs)
	b.refresh()
}

// Drain waits until every webhook's queue is empty and nothing is being
// delivered, or ctx ends, then closes the bus: events published just
// before usher stops still go out when their receivers answer at once.
func (b *Bus) Drain(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !b.idle() {
		select {
		case <-ctx.Done():
			b.Close()
			return
		case <-tick.C:
		}
	}
	b.Close()
}

// idle reports whether no webhook has an event queued or in delivery.
func (b *Bus) idle() bool {
	for _, h := range b.snap.Load().hooks {
		if h.pending.Load() > 0 {
			return false
		}
	}
	return true
}

// Close stops the bus: deliveries in flight are cut, queued events are
// dropped (counted), and stream subscribers are ended. It waits for the
// webhooks' workers.
func (b *Bus) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	for _, h := range b.hooks {
		h.stop()
	}
	for sub := range b.subs {
		sub.end()
	}
	b.hooks, b.subs = map[string]*webhook{}, map[*subscriber]struct{}{}
	b.refresh()
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
}

// WebhookStats are one webhook's counts since it started.
type WebhookStats struct {
	Room, Name string
	// Delivered, Failed and Refused count events: delivered (a 2xx),
	// given up after every attempt failed, or refused by the receiver
	// (a 4xx other than 408 and 429, or a redirect) and not retried.
	Delivered, Failed, Refused int64
	// Retries counts attempts after the first.
	Retries int64
	// Dropped counts events never tried: the queue was full, or the
	// webhook stopped with them queued.
	Dropped int64
	// Queued is the events waiting now.
	Queued int
}

// Stats returns every webhook's counts, by room and name.
func (b *Bus) Stats() []WebhookStats {
	s := b.snap.Load()
	out := make([]WebhookStats, 0, len(s.hooks))
	for _, h := range s.hooks {
		out = append(out, h.stats())
	}
	return out
}

// StreamStats are the event stream's counts: subscribers now, and
// subscribers cut off for falling behind.
func (b *Bus) StreamStats() (subscribers int, dropped int64) {
	return len(b.snap.Load().subs), b.streamDropped.Load()
}

// WebhookStatus is one webhook as GET /api/v1/webhooks shows it: its
// settings without the secret, its URL as Target, and its counts.
type WebhookStatus struct {
	Room   string `json:"room"`
	Name   string `json:"name"`
	Target string `json:"target"`
	// Events are the types it gets; empty: every room event.
	Events        []string `json:"events"`
	VisitorSample float64  `json:"visitor_events"`
	TimeoutMs     int64    `json:"timeout_ms"`
	MaxQueue      int      `json:"max_queue"`
	Delivered     int64    `json:"delivered"`
	Failed        int64    `json:"failed"`
	Refused       int64    `json:"refused"`
	Retries       int64    `json:"retries"`
	Dropped       int64    `json:"dropped"`
	Queued        int      `json:"queued"`
}

// Status returns every webhook, by room and name, without secrets.
func (b *Bus) Status() []WebhookStatus {
	s := b.snap.Load()
	out := make([]WebhookStatus, 0, len(s.hooks))
	for _, h := range s.hooks {
		c, st := h.config(), h.stats()
		events := c.Events
		if events == nil {
			events = []string{}
		}
		out = append(out, WebhookStatus{Room: c.Room, Name: c.Name, Target: Target(c.URL), Events: events,
			VisitorSample: c.VisitorSample, TimeoutMs: c.Timeout.Milliseconds(), MaxQueue: c.MaxQueue,
			Delivered: st.Delivered, Failed: st.Failed, Refused: st.Refused, Retries: st.Retries, Dropped: st.Dropped, Queued: st.Queued})
	}
	return out
}

// Target shows a webhook's URL without what may be secret in it (user
// info, path, query): scheme and host, and "/…" when there is a path.
func Target(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(an unreadable URL)"
	}
	if (u.Path == "" || u.Path == "/") && u.RawQuery == "" {
		return u.Scheme + "://" + u.Host + "/"
	}
	return u.Scheme + "://" + u.Host + "/…"
}
