package bench

import (
	"html"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// The headers between the bench visitors and the origin.
const (
	// HeaderVisitor carries a virtual visitor's ID on every request.
	HeaderVisitor = "X-Bench-Visitor"
	// HeaderOrigin is "1" on every origin answer, so that a visitor tells
	// the origin from a waiting page.
	HeaderOrigin = "X-Bench-Origin"
)

// Origin is the sample site behind usher. Requests that carry
// HeaderVisitor are bench traffic: the origin records when it saw each
// visitor's requests and answers a small page (JSON {"inside":true} when
// the request accepts application/json). Other requests get a small demo
// shop (product pages, a cart kept in a cookie) for people to click
// through. Every answer carries HeaderOrigin: 1 and Cache-Control:
// no-store.
//
// An Origin is safe for concurrent use. Set its fields before serving.
type Origin struct {
	// Name is the shop's name on its pages.
	Name string
	// Latency is added to every answer (the zero Dist adds none). The
	// sleep ends early if the request is cancelled.
	Latency Dist
	// Now is the clock the records use (nil: time.Now).
	Now func() time.Time

	mu   sync.Mutex
	seen map[string][]time.Time
	rng  *rand.Rand
}

// NewOrigin returns an origin whose shop is called name.
func NewOrigin(name string) *Origin {
	return &Origin{Name: name}
}

// ServeHTTP answers bench visitors and serves the demo shop.
func (o *Origin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := o.now()
	id := r.Header.Get(HeaderVisitor)
	delay := o.record(id, now)
	h := w.Header()
	h.Set(HeaderOrigin, "1")
	h.Set("Cache-Control", "no-store")
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if id == "" {
		o.shop(w, r)
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		h.Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"inside":true}` + "\n"))
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte("<!doctype html><meta charset=utf-8><title>" + html.EscapeString(o.name()) +
		"</title><p>Inside. Visitor " + html.EscapeString(id) + ".</p>\n"))
}

// Snapshot returns, per visitor ID, the time of every request the origin
// saw from it, in order; the first is the visitor's entry.
func (o *Origin) Snapshot() map[string][]time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string][]time.Time, len(o.seen))
	for id, ts := range o.seen {
		out[id] = slices.Clone(ts)
	}
	return out
}

// Visitors returns the IDs of the visitors the origin saw, sorted.
func (o *Origin) Visitors() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Sorted(maps.Keys(o.seen))
}

// Reset forgets every record.
func (o *Origin) Reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = nil
}

// record notes a bench request (id not empty) and draws the latency.
func (o *Origin) record(id string, now time.Time) time.Duration {
	if id == "" && o.Latency.IsZero() {
		return 0
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if id != "" {
		if o.seen == nil {
			o.seen = map[string][]time.Time{}
		}
		o.seen[id] = append(o.seen[id], now)
	}
	if o.Latency.IsZero() {
		return 0
	}
	if o.rng == nil {
		o.rng = rand.New(rand.NewPCG(1, 2))
	}
	return o.Latency.Sample(o.rng)
}

func (o *Origin) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o *Origin) name() string {
	if o.Name == "" {
		return "usher demo shop"
	}
	return o.Name
}
