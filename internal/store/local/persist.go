package local

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/usherhq/usher"
	bolt "go.etcd.io/bbolt"
)

// The file's layout: bucket "meta" holds the run state, the flush
// watermark, the lossy spans and the key ring; bucket "rooms" holds one
// bucket per room whose keys are kind(1) expiry(8) bucket(8), big-endian,
// and whose values are the counts (8 bytes, two's complement); an admitted
// visitor's record has kind 'v', the visitor id in place of expiry and
// bucket, and counted-at (ms), cell and keep as its 24-byte value.
var (
	bucketMeta  = []byte("meta")
	bucketRooms = []byte("rooms")
	keyState    = []byte("state")
	keyMark     = []byte("watermark")
	keyLossy    = []byte("lossy")
	keyKeys     = []byte("keys")
	stateRun    = []byte("running")
	stateClean  = []byte("clean")
)

// lossyKeep is how long a lossy span is remembered: longer than any
// session or refresh interval, after which no ticket counted in it can
// still be in a live cell.
const lossyKeep = 48 * time.Hour

func encodeCellKey(k cellKey) []byte {
	b := make([]byte, 17)
	b[0] = k.kind
	binary.BigEndian.PutUint64(b[1:], uint64(k.exp))
	binary.BigEndian.PutUint64(b[9:], uint64(k.bucket))
	return b
}

func decodeCellKey(b []byte) (cellKey, error) {
	if len(b) != 17 {
		return cellKey{}, fmt.Errorf("cell key of %d bytes", len(b))
	}
	return cellKey{
		kind:   b[0],
		exp:    int64(binary.BigEndian.Uint64(b[1:])),
		bucket: int64(binary.BigEndian.Uint64(b[9:])),
	}, nil
}

// encodeRecord writes an admitted visitor's record: at, cell, keep and
// from, 8 bytes each (files written before from was kept have 24 bytes:
// no from).
func encodeRecord(rc record) []byte {
	b := make([]byte, 32)
	binary.BigEndian.PutUint64(b, uint64(rc.at))
	binary.BigEndian.PutUint64(b[8:], uint64(rc.cell))
	binary.BigEndian.PutUint64(b[16:], uint64(rc.keep))
	binary.BigEndian.PutUint64(b[24:], uint64(rc.from))
	return b
}

func decodeRecord(b []byte) (record, error) {
	if len(b) != 24 && len(b) != 32 {
		return record{}, fmt.Errorf("visitor record of %d bytes", len(b))
	}
	rc := record{
		at:       int64(binary.BigEndian.Uint64(b)),
		cell:     int64(binary.BigEndian.Uint64(b[8:])),
		keep:     int64(binary.BigEndian.Uint64(b[16:])),
		admitted: true,
	}
	if len(b) == 32 {
		rc.from = int64(binary.BigEndian.Uint64(b[24:]))
	}
	return rc, nil
}

type storedKey struct {
	ID     string `json:"id"`
	Secret []byte `json:"secret"`
}

func putKeys(tx *bolt.Tx, ring []usher.Key) error {
	var sk []storedKey
	for _, k := range ring {
		sk = append(sk, storedKey{ID: k.ID, Secret: k.Secret})
	}
	b, err := json.Marshal(sk)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(keyKeys, b)
}

type storedSpan struct {
	From int64 `json:"from_ms"`
	To   int64 `json:"to_ms"`
}

// load replays the log generations gens over the file, reads it into
// memory and records a lossy span when the last run did not close cleanly.
func (s *Store) load(gens []uint64) error {
	now := s.opts.Now()
	// Nothing before this run's start can be lost: it was read from disk.
	s.opNow = now
	return s.db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		rooms, err := tx.CreateBucketIfNotExists(bucketRooms)
		if err != nil {
			return err
		}
		// The log's frames not yet compacted, over the file: idempotent, so
		// frames a compaction had applied before a crash may come again.
		var wst walState
		for _, g := range gens {
			if err := wst.read(s.opts.Path, g); err != nil {
				return fmt.Errorf("replay log: %w", err)
			}
		}
		if err := wst.apply(tx); err != nil {
			return fmt.Errorf("replay log: %w", err)
		}
		if v := meta.Get(keyKeys); v != nil {
			var sk []storedKey
			if err := json.Unmarshal(v, &sk); err != nil {
				return fmt.Errorf("key ring: %w", err)
			}
			for _, k := range sk {
				s.keys = append(s.keys, usher.Key{ID: k.ID, Secret: k.Secret})
			}
		}
		if err := s.loadInvites(tx, now); err != nil {
			return fmt.Errorf("invites: %w", err)
		}
		if err := s.loadDraws(tx, now); err != nil {
			return fmt.Errorf("draws: %w", err)
		}
		if err := s.loadDrawEntries(tx, now); err != nil {
			return fmt.Errorf("draw entries: %w", err)
		}
		var spans []storedSpan
		if v := meta.Get(keyLossy); v != nil {
			if err := json.Unmarshal(v, &spans); err != nil {
				return fmt.Errorf("lossy spans: %w", err)
			}
		}
		if st := meta.Get(keyState); st != nil && string(st) != string(stateClean) {
			// The last run crashed: what it did after its last flush may
			// be lost. A second of margin covers ops applied out of order.
			var mark int64
			if v := meta.Get(keyMark); len(v) == 8 {
				mark = int64(binary.BigEndian.Uint64(v))
			}
			spans = append(spans, storedSpan{From: mark - 1000, To: now.UnixMilli()})
			s.opts.Logger.Warn("embedded store was not closed cleanly; recovering",
				"path", s.opts.Path, "last_flush", time.UnixMilli(mark))
		}
		var kept []storedSpan
		for _, sp := range spans {
			if now.Sub(time.UnixMilli(sp.To)) < lossyKeep {
				kept = append(kept, sp)
				s.lossy = append(s.lossy, span{From: time.UnixMilli(sp.From), To: time.UnixMilli(sp.To)})
			}
		}
		b, err := json.Marshal(kept)
		if err != nil {
			return err
		}
		if err := meta.Put(keyLossy, b); err != nil {
			return err
		}
		if err := meta.Put(keyState, stateRun); err != nil {
			return err
		}
		err = rooms.ForEachBucket(func(id []byte) error {
			r := newRoom(true)
			err := rooms.Bucket(id).ForEach(func(k, v []byte) error {
				ck, err := decodeCellKey(k)
				if err != nil {
					return err
				}
				if ck.kind == kindRecord {
					rc, err := decodeRecord(v)
					if err != nil {
						return err
					}
					r.remember(visitorOf(ck), rc, now.Unix())
					return nil
				}
				if len(v) != 8 {
					return errors.New("cell value is not 8 bytes")
				}
				r.load(ck, int64(binary.BigEndian.Uint64(v)))
				return nil
			})
			if err != nil {
				return fmt.Errorf("room %q: %w", id, err)
			}
			clear(r.dirty)
			s.rooms[string(id)] = r
			return nil
		})
		// Committing here also makes the "running" state durable before
		// the first ticket of this run leaves.
		return err
	})
}

// flushLoop writes changes behind every FlushInterval until Close.
func (s *Store) flushLoop() {
	defer close(s.done)
	t := time.NewTicker(s.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := s.flush(false); err != nil {
				s.opts.Logger.Error("embedded store flush failed", "path", s.opts.Path, "err", err)
			}
			if err := s.saveDraws(); err != nil {
				s.opts.Logger.Error("embedded store flush failed", "path", s.opts.Path, "err", err)
			}
		}
	}
}

// sync returns once every change up to seq is on disk. Concurrent callers
// share flushes (group commit): one of them, the leader, flushes; the
// others wait for that flush to end, all woken at once, and return if it
// covered their change, or else one of them leads the next. (Queued on
// the flush's mutex instead, each waiter had to take it in turn only to
// find its change already on disk: under a new-visitor load an execution
// trace showed half the requests waiting there, and a quarter as much
// again in handing the mutex on.)
func (s *Store) sync(seq uint64) error {
	for {
		s.mu.Lock()
		if s.flushed >= seq {
			s.mu.Unlock()
			return nil
		}
		if running := s.syncing; running != nil {
			s.mu.Unlock()
			<-running
			continue
		}
		done := make(chan struct{})
		s.syncing = done
		s.mu.Unlock()
		var err error
		if s.overLog() {
			// The compaction fell behind: this flush, and the callers
			// waiting on it, wait for one (back-pressure), and fail if
			// it fails, so the log on disk stays bounded.
			err = s.compact()
		}
		if err == nil {
			s.flushMu.Lock()
			err = s.flushLocked()
			s.flushMu.Unlock()
		}
		s.mu.Lock()
		s.syncing = nil
		s.mu.Unlock()
		close(done)
		if err != nil {
			return err
		}
	}
}

// flush writes every change not yet on disk; final marks the file clean.
func (s *Store) flush(final bool) error {
	if !final && s.overLog() {
		if err := s.compact(); err != nil {
			return err
		}
	}
	s.flushMu.Lock()
	err := s.flushLocked()
	s.flushMu.Unlock()
	if err != nil || !final {
		return err
	}
	return s.compactFinal()
}

type write struct {
	room string
	key  cellKey
	val  int64
	rec  *record // kindRecord: the record, nil to delete it
}

// value returns w's value as the file stores it (nil: delete the key).
func (w write) value() []byte {
	if w.key.kind == kindRecord {
		if w.rec == nil {
			return nil
		}
		return encodeRecord(*w.rec)
	}
	if w.val == 0 {
		return nil
	}
	return binary.BigEndian.AppendUint64(nil, uint64(w.val))
}

// flushLocked appends every change not yet on disk to the log, as one
// frame, and syncs it.
func (s *Store) flushLocked() error {
	s.mu.Lock()
	var writes []write
	for id, r := range s.rooms {
		for k := range r.dirty {
			w := write{room: id, key: k}
			if k.kind == kindRecord {
				if rc, ok := r.records.get(visitorOf(k)); ok && rc.admitted {
					w.rec = &rc
				}
			} else {
				w.val = r.value(k)
			}
			writes = append(writes, w)
		}
		clear(r.dirty)
	}
	seq, mark := s.seq, s.opNow
	s.mu.Unlock()
	if len(writes) == 0 && seq == s.flushed {
		return nil
	}
	b := s.wal.begin(mark.UnixMilli())
	for _, w := range writes {
		b = appendWrite(b, w.room, w.key, w.value())
	}
	s.commits.Add(1)
	err := s.wal.commit(b)
	s.mu.Lock()
	if err != nil {
		// Keep the changes for the next flush.
		for _, w := range writes {
			s.rooms[w.room].mark(w.key)
		}
		s.mu.Unlock()
		return fmt.Errorf("flush embedded store: %w", err)
	}
	s.flushed = seq
	s.mu.Unlock()
	if s.wal.size >= s.opts.CompactBytes {
		select {
		case s.compactNow <- struct{}{}:
		default:
		}
	}
	return nil
}
