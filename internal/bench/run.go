package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config is one bench run.
type Config struct {
	// Target is the URL of a room path on usher, such as
	// http://127.0.0.1:8080/sale. Every request goes there, unless More
	// is set.
	Target string
	// More are further URLs of the same room on other usher nodes: each
	// request goes to the next of Target and More in turn, as a
	// round-robin load balancer sends it. Cookies are kept by host, so
	// the nodes must share one (such as 127.0.0.1 on different ports).
	More []string
	// Arrivals says when each visitor arrives.
	Arrivals Arrivals
	// Model says how visitors behave.
	Model VisitorModel
	// Seed makes the arrivals and every visitor's draws repeatable.
	Seed uint64
	// Timeout bounds each request, answer included (zero: 30 s).
	Timeout time.Duration
	// MaxConns bounds the connections to the target at once, and the idle
	// ones kept (zero: 256). Requests beyond it wait for a connection.
	MaxConns int
	// RetryDelay is the pause after a failed request before the next try
	// (zero: 1 s).
	RetryDelay time.Duration
	// MaxErrors is how many failed requests in a row make a visitor give
	// up and leave (zero: 5).
	MaxErrors int
	// Horizon stops the run this long after its start, whoever is still
	// there (zero: no limit but ctx).
	Horizon time.Duration
	// IDPrefix starts every visitor ID (zero: "v"); IDs are the prefix and
	// a zero-padded number from 1.
	IDPrefix string
	// Transport carries the requests (nil: a plain HTTP transport that
	// ignores proxy settings, sized by MaxConns).
	Transport http.RoundTripper
	// Now is the clock of the timeline (nil: time.Now). Waits always
	// follow the real clock.
	Now func() time.Time
	// Progress, when not nil, receives the run's progress about every
	// ProgressEvery (zero: DefaultProgressEvery) and once at the end
	// (Progress.Done), from one goroutine at a time.
	Progress func(Progress)
	// ProgressEvery is how often Progress is called.
	ProgressEvery time.Duration
}

// Run drives usher at cfg.Target with virtual visitors and returns what
// they saw.
//
// Each visitor has its own cookie jar and arrives at its time from the
// curve. It sends GET requests with Accept: application/json and
// X-Bench-Visitor. A JSON waiting answer ({"usherWaitingRoom": {...}},
// whatever its status) is a check-in: the visitor comes back exactly
// refreshIntervalSeconds after the answer, unless it is an abandoner whose
// patience runs out first. An answer with X-Bench-Origin is the origin: the
// visitor is admitted and browses (a request every RequestEvery until
// Browse has elapsed), then leaves. A browsing visitor who gets a waiting
// answer is requeued: it records it and leaves. Anything else is an error;
// the visitor tries again after RetryDelay and gives up after MaxErrors in
// a row.
//
// The run ends when every visitor has left, at the horizon, or when ctx
// ends; it then returns the timeline so far, with ctx's error in the last
// case. Run fails before starting only on a bad Config.
func Run(ctx context.Context, cfg Config) (*Timeline, error) {
	for _, t := range append([]string{cfg.Target}, cfg.More...) {
		u, err := url.Parse(t)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("bench: target %q: want an http:// or https:// URL", t)
		}
	}
	if cfg.Arrivals.Len() == 0 {
		return nil, errors.New("bench: no arrivals")
	}
	if err := cfg.Model.Validate(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	r := newRunner(cfg)
	if t, ok := r.transport.(*http.Transport); ok && cfg.Transport == nil {
		defer t.CloseIdleConnections()
	}
	runCtx := ctx
	if cfg.Horizon > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, cfg.Horizon)
		defer cancel()
	}

	offsets := cfg.Arrivals.Offsets(cfg.Seed)
	tl := &Timeline{Visitors: make([]Visitor, len(offsets))}
	prefix := cfg.IDPrefix
	if prefix == "" {
		prefix = "v"
	}
	width := len(strconv.Itoa(len(offsets)))
	r.start = time.Now()
	tl.Start = r.now()
	var wg sync.WaitGroup
	for i, off := range offsets {
		v := &tl.Visitors[i]
		v.ID = fmt.Sprintf("%s%0*d", prefix, width, i+1)
		v.Scheduled = off
		vs := r.newVisitor(v, uint64(i))
		wg.Go(func() { vs.live(runCtx) })
	}
	if cfg.Progress != nil {
		stop := report(cfg.Progress, orDefault(cfg.ProgressEvery, DefaultProgressEvery), func(done bool) Progress {
			return r.tally.progress(time.Since(r.start), len(offsets), done)
		})
		defer stop()
	}
	wg.Wait()
	tl.End = r.now()
	tl.Horizon = runCtx.Err() != nil
	if err := ctx.Err(); err != nil {
		return tl, err
	}
	return tl, nil
}

// report calls f with progress() every period until the returned stop is
// called, which makes the last call (done).
func report(f func(Progress), every time.Duration, progress func(done bool) Progress) (stop func()) {
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				f(progress(false))
			case <-quit:
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
		f(progress(true))
	}
}

// runner is what the visitors of one run share.
type runner struct {
	targets    []string
	turn       atomic.Uint64 // the next target's turn
	model      VisitorModel
	seed       uint64
	timeout    time.Duration
	retryDelay time.Duration
	maxErrors  int
	transport  http.RoundTripper
	now        func() time.Time
	start      time.Time // real clock, with its monotonic reading
	tally      tally
}

func newRunner(cfg Config) *runner {
	r := &runner{
		targets:    append([]string{cfg.Target}, cfg.More...),
		model:      cfg.Model,
		seed:       cfg.Seed,
		timeout:    orDefault(cfg.Timeout, 30*time.Second),
		retryDelay: orDefault(cfg.RetryDelay, time.Second),
		maxErrors:  orDefault(cfg.MaxErrors, 5),
		transport:  cfg.Transport,
		now:        cfg.Now,
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.transport == nil {
		r.transport = newTransport(orDefault(cfg.MaxConns, 256))
	}
	return r
}

// orDefault returns v, or def when v is zero or less.
func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

func newTransport(maxConns int) *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          maxConns,
		MaxIdleConnsPerHost:   maxConns,
		MaxConnsPerHost:       maxConns,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

func (r *runner) newVisitor(v *Visitor, i uint64) *visitor {
	jar, _ := cookiejar.New(nil) // never fails without options
	rng := rand.New(rand.NewPCG(r.seed, 0x9e37_79b9_7f4a_7c15^i))
	vs := &visitor{
		v:      v,
		run:    r,
		client: &http.Client{Transport: r.transport, Jar: jar, Timeout: r.timeout},
		rng:    rng,
	}
	if r.model.AbandonFraction > 0 && rng.Float64() < r.model.AbandonFraction {
		vs.patience = max(r.model.Patience.Sample(rng), time.Millisecond)
	}
	return vs
}

type answerKind uint8

const (
	answerError answerKind = iota
	answerCancelled
	answerWaiting
	answerOrigin
)

// answer is one request's outcome as a visitor reads it.
type answer struct {
	kind       answerKind
	sent, recv time.Time
	status     int
	checkIn    CheckIn
	errKind    string // also set on an origin answer whose status is not 200
	detail     string
}

// target returns the URL the next request goes to.
func (r *runner) target() string {
	if len(r.targets) == 1 {
		return r.targets[0]
	}
	return r.targets[(r.turn.Add(1)-1)%uint64(len(r.targets))]
}

// waitingJSON is the part of usher's JSON waiting answer a visitor reads.
type waitingJSON struct {
	InWaitingRoom          bool   `json:"inWaitingRoom"`
	WaitTimeKnown          bool   `json:"waitTimeKnown"`
	WaitTime               int64  `json:"waitTime"`
	WaitTimeSeconds        *int64 `json:"waitTimeSeconds"`
	WaitTimeLowSeconds     *int64 `json:"waitTimeLowSeconds"`
	WaitTimeHighSeconds    *int64 `json:"waitTimeHighSeconds"`
	RefreshIntervalSeconds int    `json:"refreshIntervalSeconds"`
	Position               int64  `json:"position"`
	PeopleAhead            int64  `json:"peopleAhead"`
	IsEventPrequeueing     bool   `json:"isEventPrequeueing"`
}

// maxBody bounds what a visitor reads of an answer.
const maxBody = 1 << 20

// get sends one request and reads what came back.
func (vs *visitor) get(ctx context.Context) answer {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, vs.run.target(), nil)
	if err != nil {
		return answer{errKind: ErrTransport, detail: err.Error(), recv: vs.run.now()}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set(HeaderVisitor, vs.v.ID)
	a := answer{sent: vs.run.now()}
	resp, err := vs.client.Do(req)
	if err == nil {
		var body []byte
		body, err = io.ReadAll(io.LimitReader(resp.Body, maxBody))
		resp.Body.Close()
		a.recv = vs.run.now()
		if err == nil {
			a.status = resp.StatusCode
			return classify(a, resp.Header, body)
		}
	}
	a.recv = vs.run.now()
	if ctx.Err() != nil {
		a.kind = answerCancelled
		return a
	}
	var ne net.Error
	a.errKind, a.detail = ErrTransport, err.Error()
	if errors.As(err, &ne) && ne.Timeout() {
		a.errKind = ErrTimeout
	}
	return a
}

// classify tells the origin, a waiting answer and an error apart.
func classify(a answer, h http.Header, body []byte) answer {
	if h.Get(HeaderOrigin) != "" {
		a.kind = answerOrigin
		if a.status != http.StatusOK {
			a.errKind, a.detail = ErrStatus, "origin answered "+strconv.Itoa(a.status)
		}
		return a
	}
	a.kind = answerError
	if !strings.Contains(h.Get("Content-Type"), "json") {
		if a.status != http.StatusOK {
			a.errKind, a.detail = ErrStatus, snippet(body)
			return a
		}
		a.errKind, a.detail = ErrUnexpected, "neither the origin nor a JSON waiting answer: "+h.Get("Content-Type")
		return a
	}
	var doc struct {
		W *waitingJSON `json:"usherWaitingRoom"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.W == nil {
		if a.status != http.StatusOK {
			a.errKind, a.detail = ErrStatus, snippet(body)
			return a
		}
		a.errKind, a.detail = ErrBadJSON, "no usherWaitingRoom object: "+snippet(body)
		return a
	}
	w := doc.W
	if !w.InWaitingRoom || w.RefreshIntervalSeconds <= 0 {
		a.errKind = ErrBadJSON
		a.detail = fmt.Sprintf("inWaitingRoom %v, refreshIntervalSeconds %d", w.InWaitingRoom, w.RefreshIntervalSeconds)
		return a
	}
	a.kind = answerWaiting
	a.checkIn = CheckIn{
		At: a.recv, Sent: a.sent,
		Position: w.Position, Ahead: w.PeopleAhead,
		ETAKnown: w.WaitTimeKnown, ETA: time.Duration(w.WaitTime) * time.Minute,
		Refresh:  time.Duration(w.RefreshIntervalSeconds) * time.Second,
		Prequeue: w.IsEventPrequeueing,
	}
	// The wait in seconds where usher gives it (whole minutes otherwise).
	if w.WaitTimeSeconds != nil {
		a.checkIn.ETA = time.Duration(*w.WaitTimeSeconds) * time.Second
	}
	if w.WaitTimeKnown && w.WaitTimeLowSeconds != nil && w.WaitTimeHighSeconds != nil {
		a.checkIn.ETALow = time.Duration(*w.WaitTimeLowSeconds) * time.Second
		a.checkIn.ETAHigh = time.Duration(*w.WaitTimeHighSeconds) * time.Second
	}
	return a
}

// snippet is the start of a body, for error details.
func snippet(body []byte) string {
	const n = 120
	s := strings.TrimSpace(string(body))
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
