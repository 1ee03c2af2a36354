package token

import (
	"sync"
	"time"
)

// DefaultCacheSize is the number of tokens a Cache keeps when NewCache is
// given 0.
const DefaultCacheSize = 10000

// Cache hands out a visitor's token again while at least half of its
// lifetime is left (see Sign), instead of signing one per request: an Ed25519
// signature costs about as much as the rest of an admitted request through
// the gate. It keeps at most its size of tokens (a few hundred bytes
// each), dropping expired ones first and then arbitrary ones, so memory
// stays bounded whatever the number of visitors. It is safe for concurrent
// use. A Cache belongs to one Signer: when the keys change, make a new
// Signer and a new Cache, so that no token of a removed key is handed out.
type Cache struct {
	s    *Signer
	size int

	mu sync.Mutex
	m  map[cacheKey]cachedToken
}

// cacheKey is everything in a token but its times.
type cacheKey struct {
	room      string
	visitor   [8]byte
	admitted  int64
	position  int64
	waited    int64
	notBefore int64 // zero unless the caller sets NotBefore
}

type cachedToken struct {
	token          string
	notBefore, exp int64
}

// NewCache returns a Cache of s's tokens holding at most size of them
// (0: DefaultCacheSize).
func (s *Signer) NewCache(size int) *Cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &Cache{s: s, size: size, m: make(map[cacheKey]cachedToken)}
}

// Sign returns a token for c: one signed earlier for the same claims
// (room, visitor, admission, position, wait) if it is valid at
// c.IssuedAt, has at least half the life left that a new one would get
// (the TTL, or less when c.Expiry, the session end, comes sooner) and does
// not outlive c.Expiry; else a new one from the Signer, which it keeps.
func (c *Cache) Sign(cl Claims) (string, error) {
	if cl.Room == "" || cl.IssuedAt.IsZero() {
		return c.s.Sign(cl) // the Signer's error
	}
	k := cacheKey{room: cl.Room, visitor: cl.VisitorID, position: cl.QueuePosition, waited: int64(cl.Waited / time.Second)}
	if !cl.AdmittedAt.IsZero() {
		k.admitted = cl.AdmittedAt.Unix()
	}
	if !cl.NotBefore.IsZero() {
		k.notBefore = cl.NotBefore.Unix()
	}
	now := cl.IssuedAt.Unix()
	// A new token would last the TTL or to the session's end, whichever
	// comes first: the cached one is handed out while at least half of
	// that is left. (Half the TTL alone would never be left of a session
	// shorter than that, and every request would be signed anew.)
	fresh := now + int64(c.s.ttl/time.Second)
	if !cl.Expiry.IsZero() && cl.Expiry.Unix() < fresh {
		fresh = cl.Expiry.Unix()
	}
	c.mu.Lock()
	t, ok := c.m[k]
	c.mu.Unlock()
	left := t.exp - now
	if ok && t.notBefore <= now && left > 0 && 2*left >= fresh-now && (cl.Expiry.IsZero() || t.exp <= cl.Expiry.Unix()) {
		return t.token, nil
	}
	tok, exp, err := c.s.sign(cl)
	if err != nil {
		return "", err
	}
	nbf := cl.NotBefore
	if nbf.IsZero() {
		nbf = cl.IssuedAt
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, there := c.m[k]; !there && len(c.m) >= c.size {
		c.evict(now)
	}
	c.m[k] = cachedToken{token: tok, notBefore: nbf.Unix(), exp: exp}
	return tok, nil
}

// evict makes room: it drops the tokens that expired by now, and if that
// frees less than an eighth of the cache, arbitrary ones (map order) up
// to an eighth. The caller holds c.mu.
func (c *Cache) evict(now int64) {
	for k, t := range c.m {
		if t.exp <= now {
			delete(c.m, k)
		}
	}
	target := c.size - c.size/8
	if target == c.size {
		target = c.size - 1
	}
	for k := range c.m {
		if len(c.m) <= target {
			break
		}
		delete(c.m, k)
	}
}

// Len returns the number of tokens the Cache holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
