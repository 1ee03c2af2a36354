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

// drawSet is a draw's entries.
type drawSet struct {
	entries map[string]struct{}
	keep    time.Time
}

var bucketDraws = []byte("draws")

func drawDBKey(k drawKey) []byte { return append(append([]byte(k.room), 0), k.id...) }

// SaveDrawSeed implements usher.Store: the seed is written and synced to
// the file before it returns, so a restart draws with the same seed.
func (s *Store) SaveDrawSeed(_ context.Context, room, id string, seed []byte, keep time.Time) ([]byte, error) {
	now := s.opts.Now()
	k := drawKey{room, id}
	s.drawMu.Lock()
	defer s.drawMu.Unlock()
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

// AddDrawEntry implements usher.Store: in memory (a node that restarts
// forgets the entries of its draws, not their seeds).
func (s *Store) AddDrawEntry(_ context.Context, room, id string, entry []byte, keep time.Time) error {
	now := s.opts.Now()
	k := drawKey{room, id}
	s.drawMu.Lock()
	defer s.drawMu.Unlock()
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
	d.entries[string(entry)] = struct{}{}
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
