package ticket

import (
	"strings"
	"sync"

	"github.com/usherhq/usher"
)

// openCacheSize bounds the tickets a Ring remembers: about 400 bytes each
// (the value, at most maxValueLen, and the ticket), so a few MB at most.
const openCacheSize = 8192

// openCache remembers tickets a Ring opened, keyed by the cookie value,
// room and cookie name, so that an admitted visitor's requests, which all
// bring the same cookie, are decrypted once. Only tickets that opened are
// kept: a forged value costs its decryption every time, as before, and
// cannot fill the cache. When full, an arbitrary entry makes room (Go's
// map iteration starts at random). The zero value is ready for use; it is
// safe for concurrent use.
//
// The cache changes nothing a ticket grants: the decision on it (its
// session's end, a revocation, the settings in force) is made afresh on
// every request from the ticket's own fields, and the binding to the
// client is checked by the caller on every request. A ring whose keys
// change is a new Ring, with an empty cache.
type openCache struct {
	mu sync.RWMutex
	m  map[openKey]usher.Ticket
}

type openKey struct{ value, room, cookie string }

func (c *openCache) get(value, room, cookie string) (usher.Ticket, bool) {
	c.mu.RLock()
	t, ok := c.m[openKey{value, room, cookie}]
	c.mu.RUnlock()
	return t, ok
}

func (c *openCache) put(value, room, cookie string, t usher.Ticket) {
	// The strings may be slices of a larger header: the cache keeps copies.
	k := openKey{strings.Clone(value), strings.Clone(room), strings.Clone(cookie)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[openKey]usher.Ticket)
	}
	if _, ok := c.m[k]; !ok && len(c.m) >= openCacheSize {
		for old := range c.m {
			delete(c.m, old)
			break
		}
	}
	c.m[k] = t
}

// len returns the number of tickets remembered.
func (c *openCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
