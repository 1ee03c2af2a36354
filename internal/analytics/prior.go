package analytics

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
)

// A room's prior (docs/admission.md, "Learning from a room's earlier
// events"): every admitted waiter whose first page was cold (the serving
// counter had no weight in it) tells the ratio of its actual wait to what
// the limits alone forecast for it. The recorder keeps those ratios as a
// histogram in the room's analytics, merged across nodes and kept 30 days
// in hour points like the others; the median is the factor the room's
// next line scales its cold first pages by.

// MinLearned is the fewest ratios a prior is taken from: fewer say more
// about who happened to come than about the room.
const MinLearned = 50

// LearnedFor is how far back a room's history is read for its prior (the
// hour points' life).
const LearnedFor = usher.AnalyticsHourKeep

// LearnPct is an admitted waiter's actual wait over what the limits
// forecast for its cold first page, in percent: false when there was no
// such forecast.
func LearnPct(actual, forecast time.Duration) (int64, bool) {
	if forecast <= 0 {
		return 0, false
	}
	return int64(100 * actual.Seconds() / max(forecast, time.Second).Seconds()), true
}

// PriorOf returns the median of the ratios h holds (percent) as a factor,
// clamped as the engine clamps it, and false when h holds fewer than
// MinLearned.
func PriorOf(h *Hist) (float64, bool) {
	if h.Count() < MinLearned {
		return 1, false
	}
	return admission.ClampPrior(h.Quantile(0.5) / 100)
}

// Learned returns the ratios of room recorded in [from, to) (hour points)
// as a histogram.
func Learned(ctx context.Context, rd Reader, room string, from, to time.Time) (*Hist, error) {
	ps, err := rd.ReadAnalytics(ctx, room, time.Hour, from.Truncate(time.Hour), to)
	if err != nil {
		return nil, err
	}
	var h Hist
	for i := range ps {
		for name, n := range ps[i].Add {
			if !strings.HasPrefix(name, pLearn) || n <= 0 {
				continue
			}
			if b, err := strconv.Atoi(name[len(pLearn):]); err == nil {
				h.AddBucket(b, uint64(n))
			}
		}
	}
	return &h, nil
}

// Priors caches every room's prior for the engine (admission.Options.Prior
// is Priors.Prior), refreshed from the store off the decision path. It is
// safe for concurrent use.
type Priors struct {
	mu     sync.Mutex
	factor map[string]float64
}

// Prior returns room's cached prior, if it has one.
func (p *Priors) Prior(room string) (float64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.factor[room]
	return f, ok
}

// Refresh reads the prior of each of rooms from rd's history up to now. A
// room whose history cannot be read keeps the prior it had; a room whose
// history is too short has none.
func (p *Priors) Refresh(ctx context.Context, rd Reader, rooms []string, now time.Time) error {
	var first error
	for _, room := range rooms {
		h, err := Learned(ctx, rd, room, now.Add(-LearnedFor), now.Add(time.Hour))
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		f, ok := PriorOf(h)
		p.mu.Lock()
		if p.factor == nil {
			p.factor = map[string]float64{}
		}
		if ok {
			p.factor[room] = f
		} else {
			delete(p.factor, room)
		}
		p.mu.Unlock()
	}
	return first
}

// Run refreshes p every interval until ctx ends.
func (p *Priors) Run(ctx context.Context, rd Reader, rooms func() []string, interval time.Duration) {
	_ = p.Refresh(ctx, rd, rooms(), time.Now())
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = p.Refresh(ctx, rd, rooms(), time.Now())
		}
	}
}
