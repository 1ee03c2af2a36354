package admin

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/usherhq/usher"
)

// Stream slots: how many of the live (GET /api/v1/live) and event
// (GET /api/v1/stream) streams of a node one token may hold. Without a
// share per token, one read token could open every stream and leave the
// operators' dashboard with 503 (attack 11 of issue 21).
const (
	// DefaultStreamSlots is how many streams of each kind a node serves
	// at once.
	DefaultStreamSlots = 64
	// DefaultStreamSlotsPerToken is how many of them one token may hold.
	DefaultStreamSlotsPerToken = 16
	// DefaultStreamSlotsReserved is how many of them read tokens may not
	// take: they are kept for write tokens (the operators' dashboards).
	DefaultStreamSlotsReserved = 16
)

// StreamSlots bound the streams of one kind a node serves. Zero fields
// take the defaults above.
type StreamSlots struct {
	// Total is the streams open at once (DefaultStreamSlots).
	Total int
	// PerToken is the most one token holds (DefaultStreamSlotsPerToken).
	PerToken int
	// Reserved are the slots only write tokens may take
	// (DefaultStreamSlotsReserved); read tokens together hold at most
	// Total - Reserved.
	Reserved int
}

// withDefaults returns s with its zero fields set, PerToken and Reserved
// kept within Total.
func (s StreamSlots) withDefaults() StreamSlots {
	if s.Total <= 0 {
		s.Total = DefaultStreamSlots
	}
	if s.PerToken <= 0 {
		s.PerToken = DefaultStreamSlotsPerToken
	}
	if s.Reserved <= 0 {
		s.Reserved = DefaultStreamSlotsReserved
	}
	s.PerToken = min(s.PerToken, s.Total)
	s.Reserved = min(s.Reserved, s.Total-1)
	return s
}

// The limits a stream request may meet, as the metrics name them.
const (
	limitNode     = "node"       // every slot is taken
	limitToken    = "token"      // the token holds its share
	limitReserved = "read_share" // read tokens hold all they may
)

// slotRefusal is a stream refused for want of a slot.
type slotRefusal struct {
	limit string
	msg   string
}

// streamSlots counts the streams of one kind each token holds.
type streamSlots struct {
	kind string // "live" or "event"
	max  StreamSlots

	mu      sync.Mutex
	held    map[string]int // by token name
	all     int
	read    int              // held by read tokens
	refused map[string]int64 // by limit
}

func newStreamSlots(kind string, max StreamSlots) *streamSlots {
	return &streamSlots{kind: kind, max: max.withDefaults(), held: map[string]int{}, refused: map[string]int64{}}
}

// acquire takes a slot for the token, or says which limit refuses it.
// The release function gives it back (once).
func (s *streamSlots) acquire(token string, write bool) (release func(), refusal *slotRefusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r *slotRefusal
	switch {
	case s.all >= s.max.Total:
		r = &slotRefusal{limitNode, fmt.Sprintf("all %d %s streams of this node are open (the most there may be); try again later", s.max.Total, s.kind)}
	case s.held[token] >= s.max.PerToken:
		r = &slotRefusal{limitToken, fmt.Sprintf("token %q holds %d %s streams, the most one token may (%d per token); close one first", token, s.held[token], s.kind, s.max.PerToken)}
	case !write && s.read >= s.max.Total-s.max.Reserved:
		r = &slotRefusal{limitReserved, fmt.Sprintf("read tokens hold %d %s streams, the most they may: the other %d are kept for write tokens", s.read, s.kind, s.max.Reserved)}
	}
	if r != nil {
		s.refused[r.limit]++
		return nil, r
	}
	s.held[token]++
	s.all++
	if !write {
		s.read++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.held[token]--; s.held[token] <= 0 {
				delete(s.held, token)
			}
			s.all--
			if !write {
				s.read--
			}
		})
	}, nil
}

// guard wraps a stream handler: the request takes a slot for its token
// for as long as it runs, or is refused, 429 when the token (or the read
// tokens together) holds its share, 503 when the node is full, with the
// limit named.
func (s *streamSlots) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		release, refusal := s.acquire(tokenName(r), tokenWrites(r))
		if refusal != nil {
			w.Header().Set("Retry-After", strconv.Itoa(5))
			if refusal.limit == limitNode {
				writeError(w, http.StatusServiceUnavailable, usher.EUnavailable, refusal.msg)
				return
			}
			writeError(w, http.StatusTooManyRequests, usher.ETooMany, refusal.msg)
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}

var (
	streamSlotsHeldDesc = prometheus.NewDesc("usher_admin_stream_slots_held",
		"Admin streams open, by kind (live: GET /api/v1/live, event: GET /api/v1/stream) and the scope of their tokens (read, write).",
		[]string{"stream", "scope"}, nil)
	streamSlotsRefusedDesc = prometheus.NewDesc("usher_admin_stream_refused_total",
		"Admin streams refused for want of a slot, by kind and by the limit met (node: every slot taken; token: the token holds its share; read_share: read tokens hold all they may, the rest kept for write tokens).",
		[]string{"stream", "limit"}, nil)
)

// slotsCollector reports the stream slots at each scrape.
type slotsCollector struct{ slots []*streamSlots }

var _ prometheus.Collector = (*slotsCollector)(nil)

func (c *slotsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- streamSlotsHeldDesc
	ch <- streamSlotsRefusedDesc
}

func (c *slotsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.slots {
		s.mu.Lock()
		all, read := s.all, s.read
		refused := make(map[string]int64, 3)
		for _, l := range []string{limitNode, limitToken, limitReserved} {
			refused[l] = s.refused[l]
		}
		s.mu.Unlock()
		ch <- prometheus.MustNewConstMetric(streamSlotsHeldDesc, prometheus.GaugeValue, float64(read), s.kind, "read")
		ch <- prometheus.MustNewConstMetric(streamSlotsHeldDesc, prometheus.GaugeValue, float64(all-read), s.kind, "write")
		for l, n := range refused {
			ch <- prometheus.MustNewConstMetric(streamSlotsRefusedDesc, prometheus.CounterValue, float64(n), s.kind, l)
		}
	}
}
