package redis

import (
	"context"
	"fmt"
	"time"
)

// LoseMoves drops the Store's pending far-back moves and its views, as a
// node that dies before it flushes: for tests.
func (s *Store) LoseMoves() (lost int) {
	f := s.far
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.rooms {
		lost += r.queued()
		r.pending, r.view = nil, nil
	}
	return lost
}

// Waiting reads room's view now and returns its live waiters: the front's
// and, for a room spread over shards, the back shards' behind its horizon.
func (s *Store) Waiting(ctx context.Context, room string, now time.Time) (int64, error) {
	v := s.readView(ctx, room, now)
	if v == nil {
		return 0, fmt.Errorf("room %s: no view", room)
	}
	return v.stats.Waiting, nil
}
