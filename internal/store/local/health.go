package local

import (
	"context"
	"sync"

	"github.com/usherhq/usher"
)

// health is the rooms' origin health counts and autopilot figures, in
// memory: they are worth a minute, and a restarted node learns them anew.
type health struct {
	mu   sync.Mutex
	secs map[string]map[int64]*usher.Health // room -> second -> counts
	gov  map[string]usher.GovernorFigure
}

// AddHealth implements usher.Store, keeping about HealthKeep of seconds
// per room.
func (s *Store) AddHealth(_ context.Context, room string, sec int64, h usher.Health) error {
	hs := &s.health
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.secs == nil {
		hs.secs = map[string]map[int64]*usher.Health{}
	}
	m := hs.secs[room]
	if m == nil {
		m = map[int64]*usher.Health{}
		hs.secs[room] = m
	}
	keep := int64(usher.HealthKeep.Seconds())
	for k := range m {
		if k < sec-keep || k > sec+keep {
			delete(m, k)
		}
	}
	cur := m[sec]
	if cur == nil {
		cur = &usher.Health{}
		m[sec] = cur
	}
	cur.Count += h.Count
	cur.Errors += h.Errors
	n := min(len(h.Buckets), usher.HealthBuckets)
	if len(cur.Buckets) < n {
		cur.Buckets = append(cur.Buckets, make([]int64, n-len(cur.Buckets))...)
	}
	for i := range n {
		cur.Buckets[i] += h.Buckets[i]
	}
	return nil
}

// Health implements usher.Store.
func (s *Store) Health(_ context.Context, room string, sec int64) (usher.Health, error) {
	hs := &s.health
	hs.mu.Lock()
	defer hs.mu.Unlock()
	cur := hs.secs[room][sec]
	if cur == nil {
		return usher.Health{}, nil
	}
	out := *cur
	out.Buckets = append([]int64(nil), cur.Buckets...)
	return out, nil
}

// Governor implements usher.Store.
func (s *Store) Governor(_ context.Context, room string) (usher.GovernorFigure, error) {
	hs := &s.health
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.gov[room], nil
}

// SwapGovernor implements usher.Store.
func (s *Store) SwapGovernor(_ context.Context, room string, from int64, next usher.GovernorFigure) (usher.GovernorFigure, error) {
	hs := &s.health
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.gov == nil {
		hs.gov = map[string]usher.GovernorFigure{}
	}
	cur := hs.gov[room]
	if cur.Version != from {
		return cur, nil
	}
	next.Version = from + 1
	next.At = next.At.UTC()
	hs.gov[room] = next
	return next, nil
}
