package local

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/usherhq/usher"
	bolt "go.etcd.io/bbolt"
)

// drawKey names a draw of a room.
type drawKey struct{ room, id string }

// drawSeed is a draw's kept seed.
type drawSeed struct {
	seed []byte
	keep time.Time
}

// drawSet is a draw's entries. unsaved are those not yet in the file:
// entries are written behind, with the waiting check-ins (saveDraws), so
// a kill -9 loses at most the last FlushInterval's (and those visitors
// find themselves missing from the published order, the others' order
// unchanged), never a seed.
type drawSet struct {
	entries map[string]struct{}
	keep    time.Time
	unsaved [][]byte
}

var (
	bucketDraws       = []byte("draws")
	bucketDrawEntries = []byte("draw-entries")
)

// drawEntryKey is an entry's key in bucketDrawEntries: the draw's key, a
// zero byte, the entry.
func drawEntryKey(k drawKey, entry []byte) []byte {
	return append(append(drawDBKey(k), 0), entry...)
}

func drawDBKey(k drawKey) []byte { return append(append([]byte(k.room), 0), k.id...) }

// SaveDrawSeed implements usher.Store: the seed is written and synced to
// the file before it returns, so a restart draws with the same seed.
func (s *Store) SaveDrawSeed(_ context.Context, room, id string, seed []byte, keep time.Time) ([]byte, error) {
	now := s.opts.Now()
	k := drawKey{room, id}
	s.drawMu.Lock()
	defer s.drawMu.Unlock()
	s.sawDrawTime(now)
	if d, ok := s.drawSeeds[k]; ok && now.Before(d.keep) {
		return bytes.Clone(d.seed), nil
	}
	for k2, d := range s.drawSeeds {
		if !now.Before(d.keep) {
			delete(s.drawSeeds, k2)
		}
	}
	if s.db != nil {
		err := s.db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(bucketDraws)
			if err != nil {
				return err
			}
			v := binary.BigEndian.AppendUint64(nil, uint64(keep.Unix()))
			return b.Put(drawDBKey(k), append(v, seed...))
		})
		if err != nil {
			return nil, fmt.Errorf("save draw seed: %w", err)
		}
	}
	s.drawSeeds[k] = drawSeed{bytes.Clone(seed), keep}
	return bytes.Clone(seed), nil
}

// loadDraws reads the kept draw seeds, dropping expired ones.
func (s *Store) loadDraws(tx *bolt.Tx, now time.Time) error {
	b, err := tx.CreateBucketIfNotExists(bucketDraws)
	if err != nil {
		return err
	}
	var stale [][]byte
	err = b.ForEach(func(k, v []byte) error {
		room, id, ok := bytes.Cut(k, []byte{0})
		if len(v) < 8 || !ok {
			return fmt.Errorf("draw seed record of %d bytes, key of %d", len(v), len(k))
		}
		keep := time.Unix(int64(binary.BigEndian.Uint64(v)), 0)
		if !now.Before(keep) {
			stale = append(stale, bytes.Clone(k))
			return nil
		}
		s.drawSeeds[drawKey{string(room), string(id)}] = drawSeed{bytes.Clone(v[8:]), keep}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range stale {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// AddDrawEntry implements usher.Store: in memory at once, in the file
// within FlushInterval (saveDraws).
func (s *Store) AddDrawEntry(_ context.Context, room, id string, entry []byte, keep time.Time) error {
	now := s.opts.Now()
	k := drawKey{room, id}
	s.drawMu.Lock()
	defer s.drawMu.Unlock()
	s.sawDrawTime(now)
	d := s.drawSets[k]
	if d == nil || !now.Before(d.keep) {
		for k2, d2 := range s.drawSets {
			if !now.Before(d2.keep) {
				delete(s.drawSets, k2)
			}
		}
		d = &drawSet{entries: map[string]struct{}{}}
		s.drawSets[k] = d
	}
	if _, ok := d.entries[string(entry)]; !ok && len(d.entries) >= usher.MaxDrawEntries {
		return usher.Errorf(usher.EUnavailable, "draw %s of room %s: %d entries, refusing more", id, room, len(d.entries))
	}
	if _, ok := d.entries[string(entry)]; !ok {
		d.entries[string(entry)] = struct{}{}
		d.unsaved = append(d.unsaved, bytes.Clone(entry))
	}
	if keep.After(d.keep) {
		d.keep = keep
	}
	return nil
}

// DrawEntries implements usher.Store.
func (s *Store) DrawEntries(_ context.Context, room, id string) ([][]byte, error) {
	now := s.opts.Now()
	s.drawMu.Lock()
	defer s.drawMu.Unlock()
	d := s.drawSets[drawKey{room, id}]
	if d == nil || !now.Before(d.keep) {
		return nil, nil
	}
	out := make([][]byte, 0, len(d.entries))
	for e := range d.entries {
		out = append(out, []byte(e))
	}
	return out, nil
}

// saveDraws writes the entries added since the last call to the file,
// each with its draw's keep time, and deletes the entries of draws past
// theirs. It is called with every flush (flushLoop, Close). Its time is
// the latest the store's draw calls were made at (drawNow), never the
// clock's: the flush loop must not call Options.Now, which tests drive
// from their own goroutine.
func (s *Store) saveDraws() error {
	if s.db == nil {
		return nil
	}
	type rec struct {
		key  []byte
		keep time.Time
	}
	var add []rec
	s.drawMu.Lock()
	now := s.drawNow
	if now.IsZero() {
		s.drawMu.Unlock()
		return nil // no draw call in this run: nothing to save or sweep
	}
	for k, d := range s.drawSets {
		for _, e := range d.unsaved {
			add = append(add, rec{drawEntryKey(k, e), d.keep})
		}
		d.unsaved = nil
	}
	s.drawMu.Unlock()
	sweep := now.Sub(s.drawsSwept) >= time.Minute
	if len(add) == 0 && !sweep {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketDrawEntries)
		if err != nil {
			return err
		}
		for _, r := range add {
			if err := b.Put(r.key, binary.BigEndian.AppendUint64(nil, uint64(r.keep.Unix()))); err != nil {
				return err
			}
		}
		if sweep {
			return deleteStaleEntries(b, now)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("save draw entries: %w", err)
	}
	if sweep {
		s.drawsSwept = now
	}
	return nil
}

// deleteStaleEntries deletes the entries whose keep time is past.
func deleteStaleEntries(b *bolt.Bucket, now time.Time) error {
	var stale [][]byte
	err := b.ForEach(func(k, v []byte) error {
		if len(v) != 8 || !now.Before(time.Unix(int64(binary.BigEndian.Uint64(v)), 0)) {
			stale = append(stale, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range stale {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// loadDrawEntries reads the kept entries of draws not yet past their
// keep time.
func (s *Store) loadDrawEntries(tx *bolt.Tx, now time.Time) error {
	b, err := tx.CreateBucketIfNotExists(bucketDrawEntries)
	if err != nil {
		return err
	}
	if err := deleteStaleEntries(b, now); err != nil {
		return err
	}
	return b.ForEach(func(k, v []byte) error {
		room, rest, ok1 := bytes.Cut(k, []byte{0})
		id, entry, ok2 := bytes.Cut(rest, []byte{0})
		if !ok1 || !ok2 || len(v) != 8 {
			return fmt.Errorf("draw entry record of %d bytes, key of %d", len(v), len(k))
		}
		dk := drawKey{string(room), string(id)}
		d := s.drawSets[dk]
		if d == nil {
			d = &drawSet{entries: map[string]struct{}{}}
			s.drawSets[dk] = d
		}
		d.entries[string(entry)] = struct{}{}
		if keep := time.Unix(int64(binary.BigEndian.Uint64(v)), 0); keep.After(d.keep) {
			d.keep = keep
		}
		return nil
	})
}

// sawDrawTime records now as the latest time of a draw call (saveDraws
// sweeps by it). drawMu must be held.
func (s *Store) sawDrawTime(now time.Time) {
	if now.After(s.drawNow) {
		s.drawNow = now
	}
}
