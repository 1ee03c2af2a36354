package local

import (
	"errors"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// Compaction moves the log's frames into the bbolt file. It starts a new
// log generation under the flush lock (appends go on in it meanwhile),
// applies the older generations to the file in one transaction, and
// removes them once that transaction is durable. A crash before the
// transaction commits leaves the older generations to be replayed at the
// next start; a crash after it, before they are removed, replays them
// again over a file that has them already, which changes nothing.

// openWAL replays nothing (load does) but removes the generations load
// applied and starts the next one.
func (s *Store) openWAL(gens []uint64) error {
	next := uint64(1)
	if len(gens) > 0 {
		next = gens[len(gens)-1] + 1
	}
	if err := removeWALs(s.opts.Path, gens); err != nil {
		return err
	}
	w, err := createWAL(s.opts.Path, next)
	if err != nil {
		return fmt.Errorf("create log: %w", err)
	}
	s.wal = w
	return nil
}

func removeWALs(base string, gens []uint64) error {
	for _, g := range gens {
		if err := os.Remove(walPath(base, g)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove compacted log: %w", err)
		}
	}
	return nil
}

// compactLoop compacts when a flush finds the log past CompactBytes, until
// Close.
func (s *Store) compactLoop() {
	defer close(s.compactDone)
	for {
		select {
		case <-s.stop:
			return
		case <-s.compactNow:
			if err := s.compact(); err != nil {
				s.opts.Logger.Error("embedded store compaction failed", "path", s.opts.Path, "err", err)
			}
		}
	}
}

// compact moves every frame appended so far into the bbolt file.
func (s *Store) compact() error {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	s.flushMu.Lock()
	upto := s.wal.gen - 1
	if s.wal.size > 0 {
		next, err := createWAL(s.opts.Path, s.wal.gen+1)
		if err != nil {
			s.flushMu.Unlock()
			return fmt.Errorf("start log: %w", err)
		}
		old := s.wal
		s.wal = next
		s.backlog += old.size
		old.f.Close()
		upto = old.gen
	}
	backlog := s.backlog
	s.flushMu.Unlock()
	if backlog == 0 {
		return nil
	}
	s.compactions.Add(1)
	if err := s.applyWALs(upto, false); err != nil {
		return err
	}
	s.flushMu.Lock()
	s.backlog -= backlog
	s.flushMu.Unlock()
	return nil
}

// overLog reports whether the log on disk (the generation appended to and
// those not yet compacted) has reached MaxLogBytes.
func (s *Store) overLog() bool {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	return s.wal.size+s.backlog >= s.opts.MaxLogBytes
}

// compactFinal applies every log generation to the file and marks it
// clean (Close, the loops stopped). It takes the locks in compact's order.
func (s *Store) compactFinal() error {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	if err := s.applyWALs(s.wal.gen, true); err != nil {
		return err
	}
	return s.wal.f.Close()
}

// applyWALs applies the log generations up to upto to the file in one
// transaction (with clean: marks the file closed cleanly), then removes
// them.
func (s *Store) applyWALs(upto uint64, clean bool) error {
	gens, err := walGens(s.opts.Path)
	if err != nil {
		return err
	}
	var done []uint64
	var st walState
	for _, g := range gens {
		if g > upto {
			break
		}
		if err := st.read(s.opts.Path, g); err != nil {
			return fmt.Errorf("compact log: %w", err)
		}
		done = append(done, g)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := st.apply(tx); err != nil {
			return err
		}
		if clean {
			return tx.Bucket(bucketMeta).Put(keyState, stateClean)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	return removeWALs(s.opts.Path, done)
}
