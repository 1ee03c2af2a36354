package notify

import (
	"context"
	"strings"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/draw"
)

// drawsState is what the monitor last told of a room's verifiable draws:
// the key of the draws it expects (so that it reads them only when that
// changes) and the draws told committed and revealed.
type drawsState struct {
	key       string
	committed map[string]bool
	revealed  map[string]bool
}

// drawsKey names the draws a room has at now and whether each shuffle is
// past its start, without reading the store: when it changes, a draw was
// made or revealed.
func drawsKey(rm *usher.Room, now time.Time) string {
	var b strings.Builder
	for i := range rm.Events {
		ev := &rm.Events[i]
		if !ev.ShuffleAtStart || now.After(ev.End.Add(24*time.Hour)) {
			continue
		}
		b.WriteString(draw.ShuffleID(ev.Start))
		if !now.Before(ev.Start) {
			b.WriteString("+")
		}
		b.WriteString(" ")
	}
	if s := rm.At(now).Settings; s.QueueingMethod == usher.Random {
		b.WriteString(draw.LotteryID(s.RefreshInterval, draw.Epoch(draw.Window(now, s.RefreshInterval))))
	}
	return b.String()
}

// drawJSON is draw.committed's and draw.revealed's data.
type drawJSON struct {
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	Commitment string `json:"commitment"`
	Secret     string `json:"secret,omitempty"`
	Beacon     string `json:"beacon,omitempty"`
	Seed       string `json:"seed,omitempty"`
	// Entries is the number of entries of a revealed shuffle, or of
	// admissions of a revealed lottery epoch; the entries themselves are
	// at URL.
	Entries *int   `json:"entries,omitempty"`
	URL     string `json:"url"`
}

// checkDraws publishes draw.committed for each draw of rm it has not told
// yet and draw.revealed for each newly revealed shuffle, and lottery epoch
// whose secret is out. It reads the draws only when drawsKey changes; at
// first sight it only records them.
func (m *Monitor) checkDraws(ctx context.Context, rm *usher.Room, now time.Time, report bool) {
	if m.opts.Draws == nil {
		return
	}
	key := drawsKey(rm, now)
	prev := m.draws[rm.ID]
	if prev == nil && key == "" { // first sight of a room without draws
		m.draws[rm.ID] = &drawsState{committed: map[string]bool{}, revealed: map[string]bool{}}
		return
	}
	if prev != nil && prev.key == key {
		return
	}
	pub, err := m.opts.Draws(ctx, rm, now)
	if err != nil {
		if ctx.Err() == nil {
			m.opts.Logger.Debug("event monitor: draws not read", "room", rm.ID, "err", err)
		}
		return // tried again at the next check
	}
	first := prev == nil
	if first {
		prev = &drawsState{committed: map[string]bool{}, revealed: map[string]bool{}}
		m.draws[rm.ID] = prev
	}
	prev.key = key
	url := "/__usher/draws/" + rm.ID
	for _, d := range pub.Draws {
		revealed := d.Revealed && (d.Kind == draw.KindShuffle || d.Secret != "")
		if !first && !prev.committed[d.ID] && report {
			m.bus.Publish(Event{Type: DrawCommitted, Room: rm.ID, Time: now,
				Data: drawJSON{ID: d.ID, Kind: d.Kind, Commitment: d.Commitment, URL: url}})
		}
		if revealed && !first && !prev.revealed[d.ID] && report {
			n := len(d.Order)
			for _, w := range d.Windows {
				n += len(w.Admitted)
			}
			m.bus.Publish(Event{Type: DrawRevealed, Room: rm.ID, Time: now,
				Data: drawJSON{ID: d.ID, Kind: d.Kind, Commitment: d.Commitment, Secret: d.Secret, Beacon: d.Beacon, Seed: d.Seed, Entries: &n, URL: url}})
		}
		prev.committed[d.ID] = true
		prev.revealed[d.ID] = prev.revealed[d.ID] || revealed
	}
	if len(prev.committed) > 64 { // forget old draws: keep what is published now
		keep := map[string]bool{}
		for _, d := range pub.Draws {
			keep[d.ID] = true
		}
		for id := range prev.committed {
			if !keep[id] {
				delete(prev.committed, id)
				delete(prev.revealed, id)
			}
		}
	}
}
