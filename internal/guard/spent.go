package guard

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"
)

// Spent remembers the challenges that have earned a ticket, so that each
// earns one only. The gate spends Solved.ID after Verify and before it
// issues the ticket; on several nodes the set is shared (the store).
type Spent interface {
	// Spend marks the challenge id of room spent until the time until and
	// reports whether it was fresh: not spent before, or spent with an
	// until that has passed. fresh is false whenever err is not nil; an
	// error means the set could not tell, or (ErrFull) refused to grow, and
	// the caller must not issue a ticket on a solution it could not spend.
	Spend(ctx context.Context, room string, id [16]byte, until time.Time) (fresh bool, err error)
}

// ErrFull is Spend's error when a bounded set is full of unexpired
// entries: it refuses new ones rather than grow (fail closed).
var ErrFull = errors.New("spent challenges: full")

// DefaultSpentCapacity is NewMemorySpent's capacity when it is given none:
// about 115 MB at most (109 bytes an entry, TestMemorySpentSize), and room
// for 3,000 new places a second with the default lifetime and skew.
const DefaultSpentCapacity = 1 << 20

// MemorySpent is a Spent in memory, for one node: it holds at most its
// capacity of entries, forgets each once its until has passed, and when
// full of unexpired entries answers ErrFull. It is safe for concurrent use.
type MemorySpent struct {
	// Now is the clock (nil: time.Now). Set it before the first Spend.
	Now func() time.Time

	capacity int
	mu       sync.Mutex
	m        map[spentKey]int64 // until, unix nanoseconds
	h        spentHeap          // the same entries, soonest until first
}

type spentKey struct {
	room string
	id   [16]byte
}

type spentEntry struct {
	until int64
	key   spentKey
}

var _ Spent = (*MemorySpent)(nil)

// NewMemorySpent returns an empty set holding at most capacity entries
// (DefaultSpentCapacity when capacity is not positive).
func NewMemorySpent(capacity int) *MemorySpent {
	if capacity <= 0 {
		capacity = DefaultSpentCapacity
	}
	return &MemorySpent{capacity: capacity, m: map[spentKey]int64{}}
}

// Spend implements Spent. An until that has already passed is not
// remembered and is reported not fresh: such a challenge cannot verify.
func (s *MemorySpent) Spend(ctx context.Context, room string, id [16]byte, until time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	t := now().UnixNano()
	u := until.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(t)
	if u <= t {
		return false, nil
	}
	k := spentKey{room, id}
	if _, ok := s.m[k]; ok {
		return false, nil // present means unexpired: expire removed the rest
	}
	if len(s.m) >= s.capacity {
		return false, ErrFull
	}
	s.m[k] = u
	heap.Push(&s.h, spentEntry{u, k})
	return true, nil
}

// expire forgets the entries whose until is at or before t.
func (s *MemorySpent) expire(t int64) {
	for len(s.h) > 0 && s.h[0].until <= t {
		e := heap.Pop(&s.h).(spentEntry)
		delete(s.m, e.key)
	}
}

// Len returns the number of entries held, expired ones not yet forgotten
// included.
func (s *MemorySpent) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// spentHeap is a min-heap of entries by until.
type spentHeap []spentEntry

func (h spentHeap) Len() int           { return len(h) }
func (h spentHeap) Less(i, j int) bool { return h[i].until < h[j].until }
func (h spentHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *spentHeap) Push(x any)        { *h = append(*h, x.(spentEntry)) }
func (h *spentHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
