package local

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/usherhq/usher"
	bolt "go.etcd.io/bbolt"
)

// maxSpent bounds the spent proof-of-work ids the store keeps: each one
// cost a client a solved challenge, and an id is kept for the challenge's
// lifetime only; beyond this many unexpired ids, Spend refuses (fail
// closed) rather than grow.
const maxSpent = 1 << 20

// onceKey names a spent id or an invite of a room.
type onceKey struct {
	room string
	id   [16]byte
}

// Spend implements usher.Store: in memory (a node that restarts forgets the
// ids it spent; a solution is good for a few minutes only).
func (s *Store) Spend(_ context.Context, room string, id [16]byte, until time.Time) (bool, error) {
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	k := onceKey{room, id}
	if u, ok := s.spent[k]; ok && now.Before(u) {
		return false, nil
	}
	if len(s.spent) >= maxSpent {
		for k2, u := range s.spent {
			if !now.Before(u) {
				delete(s.spent, k2)
			}
		}
		if len(s.spent) >= maxSpent {
			return false, usher.Errorf(usher.EUnavailable, "spent challenges: %d unexpired, refusing more", len(s.spent))
		}
	}
	s.spent[k] = until
	return true, nil
}

// UseInvite implements usher.Store: counts are written and synced before it
// returns, so a crash never gives an invite more uses.
func (s *Store) UseInvite(_ context.Context, room string, id [16]byte, max int, expires time.Time) (bool, error) {
	s.mu.Lock()
	k := onceKey{room, id}
	inv := s.invites[k]
	if inv.uses >= int64(max) {
		s.mu.Unlock()
		return false, nil
	}
	inv.uses++
	inv.expires = expires
	s.invites[k] = inv
	s.mu.Unlock()
	if s.db == nil {
		return true, nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketInvites)
		if err != nil {
			return err
		}
		v := make([]byte, 16)
		binary.BigEndian.PutUint64(v, uint64(inv.uses))
		binary.BigEndian.PutUint64(v[8:], uint64(expires.Unix()))
		return b.Put(inviteKey(k), v)
	})
	if err != nil {
		s.mu.Lock()
		inv := s.invites[k]
		inv.uses--
		s.invites[k] = inv
		s.mu.Unlock()
		return false, fmt.Errorf("use invite: %w", err)
	}
	return true, nil
}

// invite is an invite's count of uses.
type invite struct {
	uses    int64
	expires time.Time
}

var bucketInvites = []byte("invites")

func inviteKey(k onceKey) []byte {
	return append(append([]byte(k.room), 0), k.id[:]...)
}

// loadInvites reads the invites' counts, dropping expired ones.
func (s *Store) loadInvites(tx *bolt.Tx, now time.Time) error {
	b, err := tx.CreateBucketIfNotExists(bucketInvites)
	if err != nil {
		return err
	}
	var stale [][]byte
	err = b.ForEach(func(k, v []byte) error {
		if len(v) != 16 || len(k) < 17 || k[len(k)-17] != 0 {
			return fmt.Errorf("invite record of %d bytes, key of %d", len(v), len(k))
		}
		exp := time.Unix(int64(binary.BigEndian.Uint64(v[8:])), 0)
		if !now.Before(exp) {
			stale = append(stale, append([]byte(nil), k...))
			return nil
		}
		var ok onceKey
		ok.room = string(k[:len(k)-17])
		copy(ok.id[:], k[len(k)-16:])
		s.invites[ok] = invite{uses: int64(binary.BigEndian.Uint64(v)), expires: exp}
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
