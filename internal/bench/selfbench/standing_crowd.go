package selfbench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// standingWorkers is the generator's connections, each with at most one
// check-in in flight.
const standingWorkers = 256

// standingArrivals is how many newcomers a second join the line at each
// step: they arrive spread out, as a crowd does, rather than all at the
// start of the step (a burst the bench itself would make, and which every
// later check-in of theirs would repeat).
const standingArrivals = 2500

// pageSlack is what the waiting page adds to refreshIntervalSeconds before
// it checks in again, so that rounding never makes it early.
const pageSlack = 200 * time.Millisecond

// crowd is the load generator's virtual waiters: each is its ticket cookie
// in one arena and its index in a timing wheel of 10 ms slots, so that a
// million of them cost their cookies and little else (no goroutine, no
// timer each). A waiter checks in when its last answer said, as the page
// does, and leaves once let in. The check-ins go out on standingWorkers
// keep-alive HTTP/1.1 connections the generator speaks itself (see
// waiterConn): net/http's client costs more CPU a request than usher's
// answer, on the same two cores.
type crowd struct {
	ctx    context.Context
	cancel context.CancelFunc
	req    []byte // the request up to its Cookie header
	name   string // the cookie's name, the same for all

	stride int      // bytes per waiter in the arena
	chunks [][]byte // the arena: cookie values, stride bytes each, chunkSize waiters a chunk, made as waiters join
	lens   []uint16 // cookie length per waiter; 0 until its first answer
	n      atomic.Int64
	conn   func(dials *atomic.Int64) checkInConn
	dials  *atomic.Int64 // connections opened
	in     atomic.Int64  // waiters who had their first answer

	mu     sync.Mutex
	wheel  [][]uint32
	origin time.Time
	cursor int64 // the next slot to dispatch

	work chan item
	wg   sync.WaitGroup

	rec      sync.Mutex
	from     time.Time // the start of the measured step
	perSec   []int     // check-ins due in each second of the step
	on       bool
	lats     []time.Duration // send to full answer
	sched    []time.Duration // the scheduled moment to full answer
	late     []time.Duration // the scheduled moment to send
	delays   []time.Duration // send to full answer, less usher's hold
	notHeld  []time.Duration // send to full answer, of those not held
	held     int             // check-ins usher held
	errs     int
	admitted int
	sent     int
}

// item is a waiter due to check in, and its slot: the slot's end is the
// moment it is due.
type item struct {
	i    uint32
	slot int64
}

const (
	wheelSlot = 10 * time.Millisecond
	chunkSize = 1 << 14
)

// newCrowd makes room for up to max waiters of the room at url, whose
// longest check-in interval is maxRefresh, and starts the wheel. The
// workers' connections go to hosts (host:port), connection i to host i
// mod len(hosts), each asking for url's host, as a load balancer without
// stickiness forwards them to several nodes.
func newCrowd(ctx context.Context, client *http.Client, base string, hosts []string, max int, maxRefresh time.Duration) (*crowd, error) {
	ck, _, err := checkIn(ctx, client, base, "")
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	name, value, _ := strings.Cut(ck, "=")
	// What Go's HTTP client sends, so that usher parses as much as it did.
	req := fmt.Appendf(nil, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: Go-http-client/1.1\r\nAccept: application/json\r\nAccept-Encoding: gzip\r\n",
		u.RequestURI(), u.Host)
	var workers atomic.Int64
	return startCrowd(ctx, req, name, len(value)+96, max, maxRefresh, func(dials *atomic.Int64) checkInConn {
		wc := &waiterConn{addr: hosts[int(workers.Add(1)-1)%len(hosts)], dials: dials}
		// Each connection opens at the start, as a crowd's browsers are
		// connected before the steps are measured.
		_ = wc.dial()
		return wc
	}), nil
}

// checkInConn is how a worker of the crowd sends a check-in: a
// waiterConn, or in tests of the crowd's timing a stand-in for usher.
type checkInConn interface {
	get(req []byte, name string, cookie []byte) (status int, set, body []byte, err error)
	// lastHeld is how long usher held the last answer (its Server-Timing).
	lastHeld() time.Duration
	close()
}

// startCrowd starts a crowd of up to max waiters whose cookies are named
// name and at most stride bytes long, sending req (with each cookie) on
// standingWorkers connections made by conn (which counts those it opens in
// dials).
func startCrowd(ctx context.Context, req []byte, name string, stride, max int, maxRefresh time.Duration,
	conn func(dials *atomic.Int64) checkInConn) *crowd {
	c := &crowd{req: req, name: name, stride: stride, conn: conn, dials: new(atomic.Int64)}
	c.ctx, c.cancel = context.WithCancel(ctx)
	c.chunks = make([][]byte, max/chunkSize+1)
	c.lens = make([]uint16, max)
	// The wheel spans the longest interval with its jitter and rounding.
	slots := int((maxRefresh+maxRefresh/5+10*time.Second)/wheelSlot) + 1
	c.wheel = make([][]uint32, slots)
	c.origin = time.Now()
	c.work = make(chan item, 1024)
	for range standingWorkers {
		c.wg.Go(c.worker)
	}
	c.wg.Go(c.dispatch)
	return c
}

func (c *crowd) stop() {
	c.cancel()
	c.wg.Wait()
}

func (c *crowd) joined() int { return int(c.n.Load()) }

// join brings k new waiters in, standingArrivals a second, and returns
// once each has had its first answer (its ticket), each then checking in
// on its own. A newcomer whose first visit fails tries again 5 s later.
func (c *crowd) join(k int) error {
	start, first := time.Now(), c.n.Load()
	want := first + int64(k)
	for j := int64(0); ; {
		// Newcomers are filed a second ahead: the wheel sends each at its
		// own moment.
		upTo := min(int64(k), int64(time.Since(start).Seconds()*standingArrivals)+standingArrivals)
		for ; j < upTo; j++ {
			i := uint32(first + j)
			if ch := int(i) / chunkSize; c.chunks[ch] == nil {
				c.chunks[ch] = make([]byte, chunkSize*c.stride)
			}
			c.n.Add(1)
			c.schedule(i, start.Add(time.Duration(j)*time.Second/standingArrivals))
		}
		if j == int64(k) {
			break
		}
		if err := sleepCtx(c.ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	limit := time.Now().Add(time.Minute)
	for c.in.Load() < want {
		if time.Now().After(limit) {
			return fmt.Errorf("the generator had answers for %d of %d newcomers a minute after they arrived", c.in.Load()-first, k)
		}
		if err := sleepCtx(c.ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// keep stores waiter i's cookie value.
func (c *crowd) keep(i uint32, value []byte) error {
	if len(value) > c.stride || len(value) == 0 {
		return fmt.Errorf("the ticket cookie (%d bytes) does not fit the generator's %d", len(value), c.stride)
	}
	copy(c.chunks[int(i)/chunkSize][int(i)%chunkSize*c.stride:], value)
	if c.lens[i] == 0 {
		c.in.Add(1)
	}
	c.lens[i] = uint16(len(value))
	return nil
}

// cookie is waiter i's cookie value, in the arena; nil before its first
// answer.
func (c *crowd) cookie(i uint32) []byte {
	off := int(i) % chunkSize * c.stride
	return c.chunks[int(i)/chunkSize][off : off+int(c.lens[i])]
}

// schedule files waiter i for a check-in at at (at the end of at's slot).
func (c *crowd) schedule(i uint32, at time.Time) {
	d := at.Sub(c.origin)
	s := int64((d + wheelSlot - 1) / wheelSlot)
	c.mu.Lock()
	s = min(max(s, c.cursor), c.cursor+int64(len(c.wheel))-1)
	k := s % int64(len(c.wheel))
	c.wheel[k] = append(c.wheel[k], i)
	c.mu.Unlock()
}

// dispatch hands the waiters of every slot that is due to the workers, at
// the slot's end. When the workers are all busy it waits for them: the
// check-ins go out late, and the lateness is measured.
func (c *crowd) dispatch() {
	defer close(c.work)
	var spare []uint32
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		now := time.Since(c.origin)
		for {
			c.mu.Lock()
			if time.Duration(c.cursor)*wheelSlot > now {
				next := time.Duration(c.cursor)*wheelSlot - now
				c.mu.Unlock()
				t.Reset(next)
				break
			}
			k := c.cursor % int64(len(c.wheel))
			list := c.wheel[k]
			c.wheel[k] = spare[:0]
			slot := c.cursor
			c.cursor++
			c.mu.Unlock()
			for _, i := range list {
				select {
				case c.work <- item{i, slot}:
				case <-c.ctx.Done():
					return
				}
			}
			spare = list
		}
	}
}

func (c *crowd) worker() {
	wc := c.conn(c.dials)
	defer wc.close()
	for it := range c.work {
		due := c.origin.Add(time.Duration(it.slot) * wheelSlot)
		start := time.Now()
		status, set, body, err := wc.get(c.req, c.name, c.cookie(it.i))
		end := time.Now()
		if c.ctx.Err() != nil {
			return
		}
		var after time.Duration
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("status %d", status)
		}
		if err == nil {
			after, err = waitingAnswer(body)
		}
		if err == nil && set != nil {
			err = c.keep(it.i, set)
		}
		if err == nil && c.lens[it.i] == 0 {
			err = errors.New("a newcomer's waiting answer without its ticket cookie")
		}
		c.rec.Lock()
		if c.on {
			c.sent++
			if k := int(due.Sub(c.from) / time.Second); k >= 0 && k < len(c.perSec) {
				c.perSec[k]++
			}
			switch {
			case errors.Is(err, errAdmitted):
				c.admitted++
			case err != nil:
				c.errs++
			}
			if err == nil || errors.Is(err, errAdmitted) {
				lat := end.Sub(start)
				c.lats = append(c.lats, lat)
				c.sched = append(c.sched, end.Sub(due))
				c.delays = append(c.delays, max(lat-wc.lastHeld(), 0))
				if wc.lastHeld() > 0 {
					c.held++
				} else {
					c.notHeld = append(c.notHeld, lat)
				}
			}
			c.late = append(c.late, start.Sub(due))
		}
		c.rec.Unlock()
		switch {
		case errors.Is(err, errAdmitted):
			// In: it shops and leaves the line.
			if c.lens[it.i] == 0 {
				c.in.Add(1)
			}
		case err != nil:
			// A failed check-in is tried again, as the page does.
			c.schedule(it.i, end.Add(5*time.Second))
		default:
			c.schedule(it.i, end.Add(after+pageSlack))
		}
	}
}

// measure records the check-ins sent during d.
func (c *crowd) measure(ctx context.Context, d time.Duration) StandingStep {
	c.rec.Lock()
	c.on, c.lats, c.sched, c.late, c.errs, c.admitted, c.sent = true, c.lats[:0], c.sched[:0], c.late[:0], 0, 0, 0
	c.delays, c.notHeld, c.held = c.delays[:0], c.notHeld[:0], 0
	start, dials := time.Now(), c.dials.Load()
	c.from, c.perSec = start, make([]int, int(d/time.Second)+1)
	c.rec.Unlock()
	_ = sleepCtx(ctx, d)
	c.rec.Lock()
	defer c.rec.Unlock()
	c.on = false
	step := StandingStep{Waiters: c.joined(), CheckInsPerS: float64(c.sent) / time.Since(start).Seconds(),
		Errors: c.errs, Admitted: c.admitted, Connections: int(c.dials.Load() - dials)}
	// The last second is cut short by the step's end.
	step.PeakPerS = slices.Max(c.perSec[:max(len(c.perSec)-1, 1)])
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	if n := len(c.lats); n > 0 {
		slices.Sort(c.lats)
		step.P50ms, step.P99ms = ms(c.lats[n/2]), ms(c.lats[n*99/100])
		slices.Sort(c.sched)
		step.SchedP99ms = ms(max(c.sched[n*99/100], 0))
		slices.Sort(c.delays)
		step.DelayP99ms = ms(c.delays[n*99/100])
	}
	step.Held = c.held
	if n := len(c.notHeld); n > 0 {
		slices.Sort(c.notHeld)
		step.NotHeldP99ms = ms(c.notHeld[n*99/100])
	}
	if n := len(c.late); n > 0 {
		slices.Sort(c.late)
		step.LateP99ms = ms(max(c.late[n*99/100], 0))
	}
	return step
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
