package config

import (
	"slices"
	"strings"

	"github.com/usherhq/usher"
)

// checkSameRoutes reports each route that has the host and path of an
// earlier route, in the same room or another. Paths compare without
// trailing "/", and case-insensitively unless both rooms match paths
// case-sensitively.
func checkSameRoutes(r *report, rooms []usher.Room) {
	for i := range rooms {
		for k, rt := range rooms[i].Routes {
		earlier:
			for j := 0; j <= i; j++ {
				fold := !rooms[i].PathCaseSensitive || !rooms[j].PathCaseSensitive
				for l, other := range rooms[j].Routes {
					if j == i && l >= k {
						break earlier
					}
					if sameRoute(rt, other, fold) {
						at := roomLoc(i, rooms[i].ID).field("routes").index(k)
						r.add(0, at, "same host and path as %s routes[%d]", roomRef(j, rooms[j].ID), l)
						break earlier
					}
				}
			}
		}
	}
}

// sameRoute reports whether two routes match the same requests.
func sameRoute(a, b usher.Route, foldPath bool) bool {
	if !strings.EqualFold(a.Host, b.Host) {
		return false
	}
	ap, bp := strings.TrimRight(a.Path, "/"), strings.TrimRight(b.Path, "/")
	if foldPath {
		return strings.EqualFold(ap, bp)
	}
	return ap == bp
}

// checkCookieScopes reports each pair of rooms whose ticket cookies have
// the same name and overlapping scopes: a browser would send one room's
// cookie to the other.
func checkCookieScopes(r *report, rooms []usher.Room) {
	for i := range rooms {
		b := &rooms[i]
		for j := range i {
			a := &rooms[j]
			if a.CookieName() != b.CookieName() || !hostsMeet(a, b) || !pathsNest(a.CookiePath(), b.CookiePath()) {
				continue
			}
			r.add(0, roomLoc(i, b.ID).field("cookie_suffix"),
				"cookie %s (%s) overlaps the cookie of %s (%s): give the rooms distinct cookie_suffix values",
				b.CookieName(), scopeText(b), roomRef(j, a.ID), scopeText(a))
		}
	}
}

// roomHosts returns the distinct hosts of a room's routes, lowercased, and
// whether one of its routes matches any host.
func roomHosts(rm *usher.Room) (hosts []string, anyHost bool) {
	for _, rt := range rm.Routes {
		h := strings.ToLower(rt.Host)
		switch {
		case h == "":
			anyHost = true
		case !slices.Contains(hosts, h):
			hosts = append(hosts, h)
		}
	}
	return hosts, anyHost
}

// hostsMeet reports whether a request host can belong to both rooms.
func hostsMeet(a, b *usher.Room) bool {
	ah, aAny := roomHosts(a)
	bh, bAny := roomHosts(b)
	if aAny || bAny {
		return true
	}
	for _, h := range ah {
		if slices.Contains(bh, h) {
			return true
		}
	}
	return false
}

// pathsNest reports whether one cookie path is a prefix of the other at a
// segment boundary, so that one of the cookies is sent where the other is.
func pathsNest(a, b string) bool {
	return pathUnder(a, b) || pathUnder(b, a)
}

// pathUnder reports whether path p is prefix or under it.
func pathUnder(p, prefix string) bool {
	p, prefix = strings.TrimRight(p, "/"), strings.TrimRight(prefix, "/")
	return prefix == "" || p == prefix || strings.HasPrefix(p, prefix+"/")
}

// scopeText describes a room's cookie scope: "any host, path /sale".
func scopeText(rm *usher.Room) string {
	return hostsText(rm) + ", path " + rm.CookiePath()
}

// hostsText describes the hosts a room's cookie is sent to.
func hostsText(rm *usher.Room) string {
	hosts, anyHost := roomHosts(rm)
	switch {
	case anyHost:
		return "any host"
	case len(hosts) == 1:
		return "host " + hosts[0]
	}
	return "hosts " + joinAnd(hosts)
}

// joinAnd joins items as in prose: "a", "a and b", "a, b and c".
func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
