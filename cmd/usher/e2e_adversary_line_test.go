package main

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// The adversary tests measure attackers against lines of honest waiters:
// honestLine runs the waiters, admissions counts what a set of attacking
// clients got.

// admissions counts the distinct admissions that a set of clients got
// (by the admitted tickets they were given, opened with the node's key)
// and the answers of the origin they reached.
type admissions struct {
	n    *advNode
	room string

	mu       sync.Mutex
	at       map[string]time.Time // visitor id + admission time -> first answer
	origin   int
	first    time.Time // the first origin answer
	requests int
	errs     []error
}

func newAdmissions(n *advNode, room string) *admissions {
	return &admissions{n: n, room: room, at: map[string]time.Time{}}
}

// note records one answer.
func (l *admissions) note(a advAnswer, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests++
	if err != nil {
		l.errs = append(l.errs, err)
		return
	}
	if a.origin {
		l.origin++
		if l.first.IsZero() {
			l.first = a.recv
		}
	}
	if a.set == nil {
		return
	}
	tk, err := l.n.open(l.room, a.set)
	if err != nil {
		l.errs = append(l.errs, fmt.Errorf("a ticket the node set does not open: %v", err))
		return
	}
	if tk.State == usher.Admitted {
		k := fmt.Sprintf("%x@%d", tk.VisitorID, tk.AdmittedAt.UnixMilli())
		if _, ok := l.at[k]; !ok {
			l.at[k] = a.recv
		}
	}
}

// count returns the distinct admissions, the origin answers, the requests
// and the first origin answer.
func (l *admissions) count() (admitted, origin, requests int, first time.Time, errs []error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.at), l.origin, l.requests, l.first, l.errs
}

// honestLine is a line of honest waiters: each arrives, keeps its
// cookies, checks in when told, and leaves once admitted; the line records
// when each went in.
type honestLine struct {
	names    []string
	mu       sync.Mutex
	admitted map[string]time.Time // when the admitting answer came back
	lastWait map[string]time.Time // when the last request told to wait was sent
	wg       sync.WaitGroup
	errs     []error
}

// arrive makes client c arrive (its first request must be told to wait)
// and keeps it checking in until it is admitted or stop is closed.
func (h *honestLine) arrive(t *testing.T, c *advClient, url string, stop <-chan struct{}) {
	t.Helper()
	nextSecond()
	h.join(t, c, url, stop)
}

// join is arrive without waiting for the next second.
func (h *honestLine) join(t *testing.T, c *advClient, url string, stop <-chan struct{}) {
	t.Helper()
	a := c.mustWait(t, url, "on arrival")
	h.mu.Lock()
	h.names = append(h.names, c.name)
	h.lastWait[c.name] = a.sent
	h.mu.Unlock()
	h.wg.Go(func() {
		select {
		case <-stop:
			return
		case <-time.After(a.refresh):
		}
		at, last, err := c.waitHonestly(url, stop)
		h.mu.Lock()
		defer h.mu.Unlock()
		if err != nil {
			h.errs = append(h.errs, err)
		}
		if !at.IsZero() {
			h.admitted[c.name] = at
		}
		if !last.IsZero() {
			h.lastWait[c.name] = last
		}
	})
}

func newHonestLine() *honestLine {
	return &honestLine{admitted: map[string]time.Time{}, lastWait: map[string]time.Time{}}
}

// passedBy reports whether the waiter name was passed by an admission
// whose answer came back at in: it was told to wait by a request sent
// after that (or never admitted while the other was).
func (h *honestLine) passedBy(name string, in time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !in.IsZero() && h.lastWait[name].After(in)
}

// inCount returns how many were admitted.
func (h *honestLine) inCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.admitted)
}

// lastIn returns the latest admission (zero when none).
func (h *honestLine) lastIn() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	var last time.Time
	for _, at := range h.admitted {
		if at.After(last) {
			last = at
		}
	}
	return last
}

func (h *honestLine) allIn() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.admitted) == len(h.names)
}

func (h *honestLine) in(name string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.admitted[name]
}

// order returns the names in order of admission, with offsets from t0.
func (h *honestLine) order(t0 time.Time, extra map[string]time.Time) string {
	h.mu.Lock()
	all := map[string]time.Time{}
	for k, v := range h.admitted {
		all[k] = v
	}
	h.mu.Unlock()
	for k, v := range extra {
		if !v.IsZero() {
			all[k] = v
		}
	}
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return all[names[i]].Before(all[names[j]]) })
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "%s +%.1fs ", k, all[k].Sub(t0).Seconds())
	}
	return strings.TrimSpace(b.String())
}

// checkFIFO fails the test when an honest waiter was never admitted, or
// was passed by one who arrived after it: told to wait by a request sent
// after the later arrival's admitting answer came back (the bench report's
// definition of a FIFO inversion; waiters who find several free slots at
// once go in in the order they check in).
func (h *honestLine) checkFIFO(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, err := range h.errs {
		t.Errorf("honest waiter: %v", err)
	}
	for i, name := range h.names {
		if h.admitted[name].IsZero() {
			t.Errorf("honest waiter %s was never admitted", name)
		}
		for _, later := range h.names[i+1:] {
			if in := h.admitted[later]; !in.IsZero() && h.lastWait[name].After(in) {
				t.Errorf("honest waiter %s was told to wait (request sent %s) after %s, who arrived later, was admitted (%s)",
					name, h.lastWait[name].Format(time.StampMilli), later, in.Format(time.StampMilli))
			}
		}
	}
}
