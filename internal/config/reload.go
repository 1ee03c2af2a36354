package config

import (
	"fmt"
	"slices"
)

// Reloadable reports whether a running usher can move from c to next (both
// valid) without a restart: nil when it can, else a *ValidationError with
// one problem per change that needs a restart (the problems have no line).
//
// These reload live: rooms (added, removed or changed: routes, origins,
// settings, events, rules, custom pages), the top-level origin, ip_lists,
// country_header and trusted_proxies; keys may be added and removed, the
// sealing key (the first) included, as long as one remains.
//
// These need a restart: listen, admin.listen and the admin tokens (the
// listeners and the admin API are set up at start), the store, a room's
// shards (its waiters are spread over them as they arrive), watch_config,
// removing every key (the ring would silently switch to the store's), and a
// new secret under an existing key id (tickets sealed with the old secret
// would no longer open; add a key with a new id instead).
func (c *Config) Reloadable(next *Config) error {
	var r report
	restart := func(path, what, from, to string) {
		r.add(0, loc{path: path}, "changed from %s to %s, which needs a restart (%s)", from, to, what)
	}
	if c.Listen != next.Listen {
		restart("listen", "the listener is opened at start", quoteOrNone(c.Listen), quoteOrNone(next.Listen))
	}
	if c.ForwardAuth.Listen != next.ForwardAuth.Listen {
		restart("forward_auth.listen", "the listener is opened at start", quoteOrNone(c.ForwardAuth.Listen), quoteOrNone(next.ForwardAuth.Listen))
	}
	if c.Admin.Listen != next.Admin.Listen {
		restart("admin.listen", "the listener is opened at start", quoteOrNone(c.Admin.Listen), quoteOrNone(next.Admin.Listen))
	}
	if tokenOf(&c.Admin) != tokenOf(&next.Admin) || !sameTokens(c.Admin.Tokens, next.Admin.Tokens) {
		r.add(0, loc{path: "admin.token"}, "changed, which needs a restart (the admin API takes its token at start)")
	}
	if c.Store.Embedded != next.Store.Embedded {
		restart("store.embedded.path", "the store is opened at start", quoteOrNone(c.Store.Embedded.Path), quoteOrNone(next.Store.Embedded.Path))
	}
	if !sameRedis(c.Store.Redis, next.Store.Redis) {
		r.add(0, loc{path: "store.redis"}, "changed, which needs a restart (the store is opened at start)")
	}
	if c.WatchConfig != next.WatchConfig {
		restart("watch_config", "watching starts with usher", fmt.Sprint(c.WatchConfig), fmt.Sprint(next.WatchConfig))
	}
	c.reloadableKeys(&r, next)
	c.reloadableShards(&r, next)
	return r.err()
}

// reloadableShards reports each room that stays but changes its shards:
// its waiters are spread over them as they arrive, and those already
// waiting cannot be moved.
func (c *Config) reloadableShards(r *report, next *Config) {
	for i := range next.Rooms {
		rm := &next.Rooms[i]
		j := c.roomIndex(rm.ID)
		if j < 0 {
			continue
		}
		was, now := max(c.Rooms[j].Settings.Shards, 1), max(rm.Settings.Shards, 1)
		if was != now {
			r.add(0, roomLoc(i, rm.ID).field("shards"), "changed from %d to %d, which needs a restart (a room's waiters are spread over its shards as they arrive,"+
				" and those already waiting cannot be moved: restart usher once nobody waits in the room)", was, now)
		}
	}
}

// reloadableKeys reports key ring changes that need a restart: removing
// every key, or a new secret under a key id that stays.
func (c *Config) reloadableKeys(r *report, next *Config) {
	if len(c.Keys) > 0 && len(next.Keys) == 0 {
		r.add(0, loc{path: "keys"}, "every key is removed, which needs a restart (tickets would then be sealed with the store's generated key, and the ones sealed with these keys would no longer open); keep at least one key")
		return
	}
	old := make(map[string]string, len(c.Keys))
	for i := range c.Keys {
		old[c.Keys[i].ID] = secretOf(&c.Keys[i])
	}
	for i := range next.Keys {
		k := &next.Keys[i]
		was, ok := old[k.ID]
		if !ok || was == secretOf(k) {
			continue
		}
		r.add(0, loc{path: "keys"}.index(i), "key %q has a new secret, which needs a restart (tickets sealed with the old secret would no longer open): add a key with a new id instead", k.ID)
	}
}

// secretOf returns a key's secret for comparison: the decoded bytes when
// they decode, else the secret or secret file as written.
func secretOf(k *Key) string {
	s := k.Secret
	switch {
	case k.SecretFile != "" && k.secretRead:
		s = k.fileSecret
	case k.SecretFile != "":
		return "file:" + k.SecretFile
	}
	if b, err := decodeSecret(s); err == nil {
		return string(b)
	}
	return "text:" + s
}

// tokenOf returns the admin token for comparison: the token, or the token
// file's content when Load read it, else the token file's name.
func tokenOf(a *Admin) string {
	if a.TokenFile != "" && !a.tokenRead {
		return "file:" + a.TokenFile
	}
	return "token:" + a.BearerToken()
}

// quoteOrNone quotes s, or says "none" when it is empty.
func quoteOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return fmt.Sprintf("%q", s)
}

// sameRedis reports whether two Redis store configs are the same.
func sameRedis(a, b *Redis) bool {
	if a == nil || b == nil {
		return a == b
	}
	return slices.Equal(a.Addrs, b.Addrs) && a.Username == b.Username && a.Secret() == b.Secret() &&
		a.DB == b.DB && a.TLS == b.TLS && a.Cluster == b.Cluster && a.KeyPrefix == b.KeyPrefix &&
		a.FailMode == b.FailMode && a.Timeout == b.Timeout && a.WaitReplicas == b.WaitReplicas &&
		a.Slack() == b.Slack() && sameSentinel(a.Sentinel, b.Sentinel) && sameTLS(a.TLSOptions, b.TLSOptions)
}

// sameSentinel reports whether two Sentinel configs are the same.
func sameSentinel(a, b *RedisSentinel) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.MasterName == b.MasterName && slices.Equal(a.Addrs, b.Addrs) &&
		a.Username == b.Username && a.Secret() == b.Secret()
}

// sameTLS reports whether two Redis TLS configs name the same files and
// settings (a file rewritten under the same name is read at the next
// restart).
func sameTLS(a, b *RedisTLS) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.CAFile == b.CAFile && a.CertFile == b.CertFile && a.KeyFile == b.KeyFile &&
		a.ServerName == b.ServerName && a.InsecureSkipVerify == b.InsecureSkipVerify
}
