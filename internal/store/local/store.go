// Package local is the embedded store: a room's counters in memory, made
// durable in one local bbolt file so that a crash loses nothing that could
// let a room exceed its limits.
//
// Changes reach the file through a log (wal.go): each flush appends one
// frame and syncs it, and the frames are moved into the bbolt file in the
// background (compact.go) and replayed over it at the next start.
//
// Recovery rule. Admissions and session renewals are written and synced
// before Admit or Renew returns, with the admitted visitor's record, so no
// session exists whose count (or admission) the log lacks. Waiting
// check-ins are written behind, at most FlushInterval late, and waiters'
// records are kept in memory only. After a crash, the span from the last
// flush to the restart is recorded as lossy: a waiter whose last count falls
// in that span, and of whom the store has no record, is counted again in its
// new cell without being taken out of the old one, which can only
// over-count until the old cell expires. Counts are therefore never below
// the tickets that are still valid, and the limits hold across kill -9.
package local

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/usherhq/usher"
	bolt "go.etcd.io/bbolt"
)

var _ usher.Store = (*Store)(nil)

// Options configure a Store. The zero value keeps state in memory only.
type Options struct {
	// Path is the bbolt file. Empty keeps everything in memory (tests, and
	// nothing survives a restart).
	Path string
	// FlushInterval is how often changes not yet on disk are written
	// (zero: one second).
	FlushInterval time.Duration
	// Now is the clock used to record flushes and restarts (nil: time.Now).
	Now func() time.Time
	// Logger receives flush errors (nil: slog.Default()).
	Logger *slog.Logger
	// AuditKeep is how many audit records are kept (zero:
	// usher.AuditKeep).
	AuditKeep int
	// CompactBytes is the log's size past which its frames are moved into
	// the bbolt file in the background (zero: DefaultCompactBytes).
	CompactBytes int64
	// MaxLogBytes bounds the log: a flush that finds it this long (the
	// compaction fell behind) first waits for a compaction, and with it
	// the admissions that flush carries (zero: 4 x CompactBytes).
	MaxLogBytes int64
}

// DefaultCompactBytes is the log's size past which it is compacted into
// the bbolt file: a few tens of thousands of admissions, replayed in well
// under a second at the next start.
const DefaultCompactBytes = 4 << 20

// Store is the embedded store.
type Store struct {
	opts Options
	db   *bolt.DB // nil in memory

	mu    sync.Mutex
	rooms map[string]*room
	keys  []usher.Key
	lossy []span // spans whose writes may have been lost in a crash
	seq   uint64 // changes applied
	// opNow is the latest op time seen, the watermark a flush records.
	opNow time.Time

	health health // origin health and autopilot figures (their own lock)

	spent   map[onceKey]time.Time // proof-of-work ids spent, until when
	invites map[onceKey]invite    // invites' uses

	drawMu    sync.Mutex           // guards drawSeeds and drawSets (draws.go)
	drawSeeds map[drawKey]drawSeed // verifiable draws' seeds, kept in the file
	drawSets  map[drawKey]*drawSet // their entries, written behind
	// drawsSwept is when saveDraws last deleted stale entries; guarded by
	// the flush loop (and Close, after it). drawNow is the latest time a
	// draw call was made at; guarded by drawMu.
	drawsSwept time.Time
	drawNow    time.Time

	flushMu sync.Mutex // one flush at a time; guards wal
	wal     *wal       // the log appended to (wal.go)
	backlog int64      // bytes of older generations not yet compacted; guarded by flushMu

	compactMu   sync.Mutex    // one compaction at a time
	compactNow  chan struct{} // a flush found the log past CompactBytes
	compactDone chan struct{} // closed when compactLoop returns
	compactions atomic.Uint64 // compactions run (a test hook)

	flushed uint64 // seq covered by the last successful flush
	// syncing is closed when the flush a sync leads ends (nil: none);
	// guarded by mu.
	syncing    chan struct{}
	commits    atomic.Uint64 // flushes that wrote to the file
	stop, done chan struct{}
	closeOnce  sync.Once

	rt runtimeDoc // the runtime document and the audit log (runtime.go)

	analytics      map[string]memAnalytics // by room, without a file (analytics.go)
	analyticsMu    sync.Mutex              // guards analyticsSwept
	analyticsSwept time.Time               // when every room's points were last pruned
}

// span is a half-open time span [From, To).
type span struct{ From, To time.Time }

// Open opens (or creates) the store. With a path, it takes the file's lock:
// a second process on the same file fails here.
func Open(opts Options) (*Store, error) {
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.CompactBytes <= 0 {
		opts.CompactBytes = DefaultCompactBytes
	}
	if opts.MaxLogBytes <= 0 {
		opts.MaxLogBytes = 4 * opts.CompactBytes
	}
	s := &Store{
		opts:      opts,
		rooms:     map[string]*room{},
		spent:     map[onceKey]time.Time{},
		invites:   map[onceKey]invite{},
		drawSeeds: map[drawKey]drawSeed{},
		drawSets:  map[drawKey]*drawSet{},
		stop:      make(chan struct{}),
		done:      make(chan struct{}),

		compactNow:  make(chan struct{}, 1),
		compactDone: make(chan struct{}),
	}
	if opts.Path != "" {
		db, err := bolt.Open(opts.Path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
		if err != nil {
			return nil, fmt.Errorf("open embedded store %q: %w", opts.Path, err)
		}
		s.db = db
		gens, err := walGens(opts.Path)
		if err == nil {
			err = s.load(gens)
		}
		if err == nil {
			err = s.openWAL(gens)
		}
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("load embedded store %q: %w", opts.Path, err)
		}
		go s.flushLoop()
		go s.compactLoop()
	} else {
		close(s.done)
		close(s.compactDone)
	}
	return s, nil
}

func (s *Store) roomLocked(id string) *room {
	r := s.rooms[id]
	if r == nil {
		r = newRoom(s.db != nil)
		s.rooms[id] = r
	}
	return r
}

// trusted reports whether a visitor counted in c may be taken out of it:
// not when it was counted during a span whose writes a crash may have lost.
func (s *Store) trusted(c usher.Cell) bool {
	for _, l := range s.lossy {
		if !c.At.Before(l.From) && c.At.Before(l.To) {
			return false
		}
	}
	return true
}

func (s *Store) noteOp(now time.Time) {
	s.seq++
	if now.After(s.opNow) {
		s.opNow = now
	}
}

// Admit implements usher.Store.
func (s *Store) Admit(_ context.Context, roomID string, op usher.AdmitOp) (usher.AdmitResult, error) {
	s.mu.Lock()
	r := s.roomLocked(roomID)
	res := r.admit(&op, s.trusted(op.From))
	s.noteOp(op.Now)
	seq := s.seq
	s.mu.Unlock()
	if res.Admitted && !res.Replay && s.db != nil {
		// An admission is durable before its ticket leaves.
		if err := s.sync(seq); err != nil {
			return usher.AdmitResult{}, err
		}
	}
	return res, nil
}

// Renew implements usher.Store. A renewal is durable before it returns:
// the renewed ticket's session must be counted after a crash.
func (s *Store) Renew(_ context.Context, roomID string, op usher.RenewOp) (usher.RenewResult, error) {
	s.mu.Lock()
	r := s.roomLocked(roomID)
	res := r.renew(&op, s.trusted(op.From))
	s.noteOp(op.Now)
	seq := s.seq
	s.mu.Unlock()
	if !res.Replay && s.db != nil {
		if err := s.sync(seq); err != nil {
			return usher.RenewResult{}, err
		}
	}
	return res, nil
}

// Peek implements usher.Store.
func (s *Store) Peek(_ context.Context, roomID string, now time.Time, bucket int64) (int64, usher.RoomStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rooms[roomID]
	if r == nil {
		return 0, usher.RoomStats{}, nil
	}
	ahead, st := r.peek(now, bucket)
	return ahead, st, nil
}

// Clamped returns the number of decrements refused in a room because the
// cell held nothing (counts lost in a crash); a test hook and a diagnostic.
func (s *Store) Clamped(roomID string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.rooms[roomID]; r != nil {
		return r.clamped
	}
	return 0
}

// Records returns the number of visitors a room remembers (a test hook:
// memory follows live visitors).
func (s *Store) Records(roomID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.rooms[roomID]; r != nil {
		return r.records.len()
	}
	return 0
}

// Stats implements usher.Store.
func (s *Store) Stats(_ context.Context, roomID string, now time.Time) (usher.RoomStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rooms[roomID]
	if r == nil {
		return usher.RoomStats{}, nil
	}
	r.expire(now.Unix())
	// Stats without limits: slots are left to the caller.
	return r.stats(r.at(now.UnixMilli()), 0, 0), nil
}

// Lapsed implements usher.Store: the waiting counts expired since the
// store opened.
func (s *Store) Lapsed(_ context.Context, roomID string, now time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rooms[roomID]
	if r == nil {
		return 0, nil
	}
	r.expire(now.Unix())
	return r.lapsed, nil
}

// LoadKeys implements usher.Store.
func (s *Store) LoadKeys(context.Context) ([]usher.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneKeys(s.keys), nil
}

// SaveKeys implements usher.Store.
func (s *Store) SaveKeys(_ context.Context, ring []usher.Key) ([]usher.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.keys) > 0 {
		return cloneKeys(s.keys), nil
	}
	if s.db != nil {
		if err := s.db.Update(func(tx *bolt.Tx) error { return putKeys(tx, ring) }); err != nil {
			return nil, fmt.Errorf("save keys: %w", err)
		}
	}
	s.keys = cloneKeys(ring)
	return cloneKeys(s.keys), nil
}

func cloneKeys(ks []usher.Key) []usher.Key {
	var out []usher.Key
	for _, k := range ks {
		out = append(out, usher.Key{ID: k.ID, Secret: append([]byte(nil), k.Secret...)})
	}
	return out
}

// Close writes what is pending, marks the file closed cleanly and releases
// it. Close after Close does nothing.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		if s.db == nil {
			return
		}
		close(s.stop)
		<-s.done
		<-s.compactDone
		err = s.flush(true)
		if derr := s.saveDraws(); err == nil {
			err = derr
		}
		if cerr := s.db.Close(); err == nil {
			err = cerr
		}
	})
	return err
}
