package local

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/usherhq/usher"
	bolt "go.etcd.io/bbolt"
)

// The runtime document and the audit log live in buckets of their own:
// "runtime" holds the document under "doc" as version(8) then the bytes;
// "audit" holds one record per version, keyed by the version (8 bytes,
// big-endian, so that keys sort by version).
var (
	bucketRuntime = []byte("runtime")
	bucketAudit   = []byte("audit")
	keyRuntimeDoc = []byte("doc")
)

// runtimeDoc is the runtime document and audit log: in memory, and in the
// file when there is one (read on first use).
type runtimeDoc struct {
	mu      sync.Mutex
	loaded  bool
	version int64
	doc     []byte
	count   int                 // records in the audit bucket
	last    int64               // the number of the log's last record (0: none)
	audit   []usher.AuditRecord // the log, oldest first, in memory only
}

// auditKeep returns how many audit records the store keeps.
func (s *Store) auditKeep() int {
	if s.opts.AuditKeep > 0 {
		return s.opts.AuditKeep
	}
	return usher.AuditKeep
}

// loadRuntimeLocked reads the document's version and the audit count from
// the file, once. s.rt.mu is held.
func (s *Store) loadRuntimeLocked() error {
	if s.rt.loaded || s.db == nil {
		s.rt.loaded = true
		return nil
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketRuntime); b != nil {
			if v := b.Get(keyRuntimeDoc); v != nil {
				if len(v) < 8 {
					return fmt.Errorf("runtime document of %d bytes", len(v))
				}
				s.rt.version = int64(binary.BigEndian.Uint64(v))
				s.rt.doc = append([]byte(nil), v[8:]...)
			}
		}
		if b := tx.Bucket(bucketAudit); b != nil {
			s.rt.count = b.Stats().KeyN
			if k, _ := b.Cursor().Last(); len(k) == 8 {
				s.rt.last = int64(binary.BigEndian.Uint64(k))
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load runtime document: %w", err)
	}
	s.rt.loaded = true
	return nil
}

// LoadRuntime implements usher.Store.
func (s *Store) LoadRuntime(context.Context) (int64, []byte, error) {
	s.rt.mu.Lock()
	defer s.rt.mu.Unlock()
	if err := s.loadRuntimeLocked(); err != nil {
		return 0, nil, err
	}
	return s.rt.version, append([]byte(nil), s.rt.doc...), nil
}

// RuntimeVersion implements usher.Store.
func (s *Store) RuntimeVersion(context.Context) (int64, error) {
	s.rt.mu.Lock()
	defer s.rt.mu.Unlock()
	if err := s.loadRuntimeLocked(); err != nil {
		return 0, err
	}
	return s.rt.version, nil
}

// SwapRuntime implements usher.Store: the document and its audit record
// are written in one transaction, synced before it returns; the oldest
// records beyond AuditKeep go in the same transaction.
func (s *Store) SwapRuntime(_ context.Context, from int64, doc, audit []byte) (int64, error) {
	s.rt.mu.Lock()
	defer s.rt.mu.Unlock()
	if err := s.loadRuntimeLocked(); err != nil {
		return 0, err
	}
	if s.rt.version != from {
		return 0, usher.Errorf(usher.EConflict, "runtime document: version %d, not %d: changed meanwhile", s.rt.version, from)
	}
	// The next version is above the log's records appended alone.
	next := max(from, s.rt.last) + 1
	if err := s.appendAuditLocked(next, true, doc, audit); err != nil {
		return 0, fmt.Errorf("swap runtime document: %w", err)
	}
	s.rt.version, s.rt.doc = next, append([]byte(nil), doc...)
	return next, nil
}

// AppendAudit implements usher.Store: the record is numbered after the
// log's last record and the document's version, and written alone.
func (s *Store) AppendAudit(_ context.Context, audit []byte) (int64, error) {
	s.rt.mu.Lock()
	defer s.rt.mu.Unlock()
	if err := s.loadRuntimeLocked(); err != nil {
		return 0, err
	}
	next := max(s.rt.version, s.rt.last) + 1
	if err := s.appendAuditLocked(next, false, nil, audit); err != nil {
		return 0, fmt.Errorf("append audit record: %w", err)
	}
	return next, nil
}

// appendAuditLocked appends audit as record next, with the runtime
// document doc as version next when withDoc, in one transaction
// synced before it returns; the oldest records beyond AuditKeep go in the
// same transaction. s.rt.mu is held.
func (s *Store) appendAuditLocked(next int64, withDoc bool, doc, audit []byte) error {
	keep := s.auditKeep()
	if s.db == nil {
		s.rt.audit = append(s.rt.audit, usher.AuditRecord{Version: next, Data: append([]byte(nil), audit...)})
		if n := len(s.rt.audit); n > keep {
			s.rt.audit = append([]usher.AuditRecord(nil), s.rt.audit[n-keep:]...)
		}
		s.rt.last = next
		return nil
	}
	count := s.rt.count
	err := s.db.Update(func(tx *bolt.Tx) error {
		ab, err := tx.CreateBucketIfNotExists(bucketAudit)
		if err != nil {
			return err
		}
		if withDoc {
			rb, err := tx.CreateBucketIfNotExists(bucketRuntime)
			if err != nil {
				return err
			}
			v := make([]byte, 8, 8+len(doc))
			binary.BigEndian.PutUint64(v, uint64(next))
			if err := rb.Put(keyRuntimeDoc, append(v, doc...)); err != nil {
				return err
			}
		}
		if err := ab.Put(versionKey(next), append([]byte(nil), audit...)); err != nil {
			return err
		}
		count++
		c := ab.Cursor()
		for k, _ := c.First(); k != nil && count > keep; k, _ = c.First() {
			if err := c.Delete(); err != nil {
				return err
			}
			count--
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.rt.count, s.rt.last = count, next
	return nil
}

// ReadAudit implements usher.Store.
func (s *Store) ReadAudit(_ context.Context, before int64, limit int) ([]usher.AuditRecord, error) {
	if limit <= 0 {
		return nil, nil
	}
	if s.db == nil {
		s.rt.mu.Lock()
		defer s.rt.mu.Unlock()
		var out []usher.AuditRecord
		for i := len(s.rt.audit) - 1; i >= 0 && len(out) < limit; i-- {
			if r := s.rt.audit[i]; before <= 0 || r.Version < before {
				out = append(out, usher.AuditRecord{Version: r.Version, Data: append([]byte(nil), r.Data...)})
			}
		}
		return out, nil
	}
	var out []usher.AuditRecord
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAudit)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		var k, v []byte
		if before <= 0 {
			k, v = c.Last()
		} else if k, _ = c.Seek(versionKey(before)); k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		for ; k != nil && len(out) < limit; k, v = c.Prev() {
			if len(k) != 8 {
				return fmt.Errorf("audit key of %d bytes", len(k))
			}
			out = append(out, usher.AuditRecord{Version: int64(binary.BigEndian.Uint64(k)), Data: append([]byte(nil), v...)})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	return out, nil
}

// versionKey is the audit bucket's key of a version.
func versionKey(v int64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(v))
	return b
}
