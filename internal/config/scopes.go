package config

import (
	"slices"
	"strings"

	"golang.org/x/net/publicsuffix"

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
	scopes := make([]cookieScope, len(rooms))
	for i := range rooms {
		scopes[i] = scopeOf(&rooms[i])
	}
	for i := range rooms {
		b := &rooms[i]
		for j := range i {
			a := &rooms[j]
			if a.CookieName() != b.CookieName() || !scopesMeet(scopes[j], scopes[i]) || !pathsNest(a.CookiePath(), b.CookiePath()) {
				continue
			}
			r.add(0, roomLoc(i, b.ID).field("cookie_suffix"),
				"cookie %s (%s) overlaps the cookie of %s (%s): give the rooms distinct cookie_suffix values",
				b.CookieName(), scopeText(b), roomRef(j, a.ID), scopeText(a))
		}
	}
}

// CookieDomain returns the Domain attribute of the ticket cookie of a room
// whose routes have hosts: the parent domain the hosts have in common, so
// that one cookie (one visitor) covers them all. For www.shop.test and
// checkout.shop.test it is "shop.test"; for shop.test and www.shop.test,
// "shop.test". It is "" (no Domain attribute: the cookie stays on the host
// that set it) when any host is "" (a route matching any host), when there
// is only one distinct host, when a host is an IP address, or when the
// common parent has fewer than two labels ("test", "com"): public suffixes
// are not known here, so a parent of one label is taken as one. Hosts
// compare case-insensitively; the result is lower case.
func CookieDomain(hosts []string) string { return usher.CookieDomain(hosts) }

// routeHosts returns the host of each of a room's routes, "" for a route
// that matches any host.
func routeHosts(rm *usher.Room) []string {
	hosts := make([]string, len(rm.Routes))
	for i, rt := range rm.Routes {
		hosts[i] = rt.Host
	}
	return hosts
}

// checkCookieDomain reports a room whose routes all name hosts, several of
// them, with no parent domain in common: its cookie cannot cover them all.
func checkCookieDomain(r *report, rm *usher.Room, at loc) {
	hosts, anyHost := roomHosts(rm)
	if anyHost || len(hosts) < 2 {
		return
	}
	if d := CookieDomain(hosts); d != "" {
		if ps, icann := publicsuffix.PublicSuffix(d); ps == d && (icann || strings.Contains(d, ".")) {
			r.add(0, at.field("routes"), "the routes' hosts, %s, share only %s, a public suffix (several owners' sites live under it): a cookie for it would go to every one of them, so none is set. Put the hosts under a domain of your own or split the room", joinAnd(hosts), d)
		}
		return
	}
	r.add(0, at.field("routes"), "the routes' hosts, %s, share no parent domain (of two labels or more, like shop.example), so no cookie covers them all and one visitor cannot be one visitor across them: put the hosts under one domain or split the room", joinAnd(hosts))
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

// cookieScope is where a room's cookie is sent: any host; a domain and its
// subdomains (CookieDomain); or each of the room's hosts.
type cookieScope struct {
	anyHost bool
	domain  string
	hosts   []string
}

// scopeOf returns a room's cookie scope.
func scopeOf(rm *usher.Room) cookieScope {
	hosts, anyHost := roomHosts(rm)
	return cookieScope{anyHost: anyHost, domain: CookieDomain(hosts), hosts: hosts}
}

// covers reports whether a cookie of scope s is sent to host h.
func (s cookieScope) covers(h string) bool {
	switch {
	case s.anyHost:
		return true
	case s.domain != "":
		return domainCovers(s.domain, h)
	}
	return slices.Contains(s.hosts, h)
}

// domainCovers reports whether a cookie with Domain d is sent to host h:
// h is d or a subdomain of d.
func domainCovers(d, h string) bool {
	return h == d || strings.HasSuffix(h, "."+d)
}

// hostsMeet reports whether a request host can get the cookies of both
// rooms.
func hostsMeet(a, b *usher.Room) bool { return scopesMeet(scopeOf(a), scopeOf(b)) }

// scopesMeet reports whether a request host can get the cookies of both
// scopes.
func scopesMeet(as, bs cookieScope) bool {
	switch {
	case as.anyHost || bs.anyHost:
		return true
	case as.domain != "" && bs.domain != "":
		return domainCovers(as.domain, bs.domain) || domainCovers(bs.domain, as.domain)
	case as.domain != "":
		as, bs = bs, as
	}
	// Now as has no domain: its cookie goes to its hosts only.
	for _, h := range as.hosts {
		if bs.covers(h) {
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
	case CookieDomain(hosts) != "":
		return "hosts under " + CookieDomain(hosts)
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
