package ticket

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/usherhq/usher"
)

// openCacheSize bounds the tickets a Ring remembers: about 400 bytes each
// (the value, at most maxValueLen, and the ticket), so a few MB at most.
const openCacheSize = 8192

// openCache remembers tickets a Ring opened, keyed by the cookie value,
// so that an admitted visitor's requests, which all bring the same cookie,
// are decrypted once. A value opens for one room and cookie name only
// (both are authenticated with it): the entry keeps them and a lookup for
// others misses. Only tickets that opened are kept: a forged value costs
// its decryption every time, as before, and cannot fill the cache. Past
// its bound, arbitrary entries make room. The zero value is ready for use;
// it is safe for concurrent use, and lookups take no lock (sync.Map).
//
// The cache changes nothing a ticket grants: the decision on it (its
// session's end, a revocation, the settings in force) is made afresh on
// every request from the ticket's own fields, and the binding to the
// client is checked by the caller on every request. A ring whose keys
// change is a new Ring, with an empty cache.
type openCache struct {
	m sync.Map // value -> *openEntry
	n atomic.Int64
}

type openEntry struct {
	room, cookie string
	t            usher.Ticket
}

func (c *openCache) get(value, room, cookie string) (usher.Ticket, bool) {
	v, ok := c.m.Load(value)
	if !ok {
		return usher.Ticket{}, false
	}
	e := v.(*openEntry)
	if e.room != room || e.cookie != cookie {
		return usher.Ticket{}, false
	}
	return e.t, true
}

func (c *openCache) put(value, room, cookie string, t usher.Ticket) {
	// The strings may be slices of a larger header: the cache keeps copies.
	e := &openEntry{room: strings.Clone(room), cookie: strings.Clone(cookie), t: t}
	if _, loaded := c.m.Swap(strings.Clone(value), e); loaded {
		return
	}
	if c.n.Add(1) <= openCacheSize {
		return
	}
	// Over the bound: drop entries until back within it (the map's order
	// follows its keys' hashes, seeded at random).
	c.m.Range(func(k, _ any) bool {
		if _, deleted := c.m.LoadAndDelete(k); deleted {
			if c.n.Add(-1) <= openCacheSize {
				return false
			}
		}
		return true
	})
}

// len returns the number of tickets remembered.
func (c *openCache) len() int { return int(c.n.Load()) }
