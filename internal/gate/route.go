package gate

import (
	"cmp"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/usherhq/usher"
)

// route is one room route, normalised for matching.
type route struct {
	room  *usher.Room
	orig  usher.Route
	host  string // lower case, no port, no trailing dot; "" matches any host
	path  string // cleaned, rooted, no trailing slash ("/" matches all)
	exact bool   // the room's paths are case-sensitive
}

// table holds every route, most specific first: longest path, then a
// specific host before any host.
type table []route

func newTable(rooms []*usher.Room) (table, error) {
	var t table
	seen := map[string]string{}
	for _, room := range rooms {
		for _, rt := range room.Routes {
			r := route{room: room, orig: rt, host: normHost(rt.Host), path: cleanPath(rt.Path), exact: room.PathCaseSensitive}
			if !r.exact {
				r.path = strings.ToLower(r.path)
			}
			key := r.host + " " + r.path
			if other, ok := seen[key]; ok {
				return nil, fmt.Errorf("room %q: route %q%q is also a route of room %q", room.ID, rt.Host, rt.Path, other)
			}
			seen[key] = room.ID
			t = append(t, r)
		}
	}
	slices.SortStableFunc(t, func(a, b route) int {
		if c := cmp.Compare(len(b.path), len(a.path)); c != 0 {
			return c
		}
		return cmp.Compare(len(b.host), len(a.host))
	})
	return t, nil
}

// match returns the index of the most specific route that matches host (as
// requested, port included) and any of the candidate paths, or -1.
func (t table) match(host string, paths []string) int {
	host = normHost(host)
	best := -1
	for _, p := range paths {
		var lower string
		for i, r := range t {
			if best >= 0 && i >= best {
				break
			}
			if r.host != "" && r.host != host {
				continue
			}
			q := p
			if !r.exact {
				if lower == "" {
					lower = strings.ToLower(p)
				}
				q = lower
			}
			if underPrefix(q, r.path) {
				best = i
				break
			}
		}
	}
	return best
}

// ambiguous reports whether some reading in paths matches a route of
// another room than route best's (match's answer for all of them): the
// proxy or the origin could read the request as a page of either room, and
// no one room's decision covers it.
func (t table) ambiguous(host string, paths []string, best int) bool {
	if len(paths) < 2 || best < 0 {
		return false
	}
	for _, p := range paths {
		if i := t.match(host, []string{p}); i >= 0 && t[i].room != t[best].room {
			return true
		}
	}
	return false
}

// errAmbiguous refuses a path whose readings fall in two rooms.
var errAmbiguous = usher.Errorf(usher.EInvalid,
	"the request path reads as pages of two rooms (its encoded slashes, backslashes or ';' parameters read either way): send it without them")

// underPrefix reports whether p is prefix or below it at a segment
// boundary; prefix has no trailing slash except for "/".
func underPrefix(p, prefix string) bool {
	if prefix == "/" {
		return true
	}
	return strings.HasPrefix(p, prefix) && (len(p) == len(prefix) || p[len(prefix)] == '/')
}

// pathReading is the one reading of a request's path that routing, bypass
// rules and usher's own paths all use (readPath).
type pathReading struct {
	// paths are the path as origins may see it, for routing and rules
	// (requestPaths).
	paths []string
	// own reports a path that is usher's: literally OwnPrefix, or under
	// it, as sent, in the one spelling every proxy and origin reads alike
	// (ownLiteral). rest is the path after OwnPrefix.
	own  bool
	rest string
}

// errOwnSpelling refuses a path sent literally under OwnPrefix in a
// spelling that some proxy or origin could read as another path.
var errOwnSpelling = usher.Errorf(usher.EInvalid,
	"a path under "+OwnPrefix+" must be sent as it is read: letters, digits, '-', '_', '.', '~' and single slashes, no percent-encoding, dot segments or ';'")

// readPath reads the path of u once, for everything the gate decides on
// it. The path is usher's own (own) only when the escaped path as sent
// starts literally, letter case included, with OwnPrefix (or is OwnPrefix
// without its slash) and holds nothing a proxy or an origin could read
// otherwise (ownLiteral); such a path sent in any other spelling under
// the literal prefix is refused (errOwnSpelling). Every other path,
// including one that decodes, folds or cleans to OwnPrefix
// ("/__USHER/x", "/%5f%5fusher/x", "/x/../__usher/x", "//__usher/x"), is
// not usher's: it is routed and decided as the page of the room it could
// become, on the readings of requestPaths. A path holding a '#' as sent
// is refused (errFragment): a browser never sends one, and servers differ
// on whether it ends the path.
func readPath(u *url.URL) (pathReading, error) {
	esc := u.EscapedPath()
	if esc == OwnPrefix[:len(OwnPrefix)-1] || strings.HasPrefix(esc, OwnPrefix) {
		if !ownLiteral(esc) || u.Path != esc {
			return pathReading{}, errOwnSpelling
		}
		rest := strings.TrimPrefix(esc[len(OwnPrefix)-1:], "/")
		return pathReading{paths: []string{esc}, own: true, rest: rest}, nil
	}
	if strings.IndexByte(u.RawPath, '#') >= 0 {
		// A '#' as sent (not %23): some servers end the path there, as at
		// a fragment, and others do not.
		return pathReading{}, errFragment
	}
	paths, err := requestPaths(u)
	if err != nil {
		return pathReading{}, usher.Errorf(usher.EInvalid, "the request path is not valid")
	}
	return pathReading{paths: paths}, nil
}

// errFragment refuses a request path holding a raw '#'.
var errFragment = usher.Errorf(usher.EInvalid, "the request path must not hold a '#' (send it as %%23)")

// ownLiteral reports whether esc, an escaped path under OwnPrefix, is
// spelled so that every server reads it as it is: only unreserved
// characters and single slashes, no "." or ".." segment.
func ownLiteral(esc string) bool {
	for i := 0; i < len(esc); i++ {
		c := esc[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
		case c == '/':
			if i+1 < len(esc) && esc[i+1] == '/' {
				return false
			}
		default:
			return false
		}
	}
	for _, seg := range strings.Split(esc, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// requestPaths returns the request path as origins may see it, for
// matching: percent-decoded, backslashes read as slashes, cleaned (dot
// segments and repeated slashes resolved) and rooted. The first element is
// that reading. Further readings are added when the escaped path holds an
// encoded slash or backslash (kept inside its segment, as some servers do)
// or a ";" (path parameters dropped from each segment, as Java servers do),
// so that no reading an origin might make walks around a room: the most
// specific room matched by any reading wins. It fails when the path does
// not decode or holds a NUL.
func requestPaths(u *url.URL) ([]string, error) {
	esc := u.EscapedPath()
	p, err := decodePath(esc)
	if err != nil {
		return nil, err
	}
	paths := []string{cleanPath(p)}
	if strings.Contains(esc, "%2") || strings.Contains(esc, "%5") {
		lit := strings.NewReplacer("%2f", "%252F", "%2F", "%252F", "%5c", "%255C", "%5C", "%255C").Replace(esc)
		if q, err := decodePath(lit); err == nil {
			paths = appendNew(paths, cleanPath(q))
		}
	}
	if strings.IndexByte(p, ';') >= 0 {
		for _, q := range slices.Clone(paths) {
			paths = appendNew(paths, cleanPath(dropParams(q)))
		}
		paths = appendNew(paths, cleanPath(dropParams(p)))
	}
	return paths, nil
}

func decodePath(esc string) (string, error) {
	p, err := url.PathUnescape(esc)
	if err != nil {
		return "", err
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("NUL in path")
	}
	return p, nil
}

func appendNew(paths []string, p string) []string {
	if slices.Contains(paths, p) {
		return paths
	}
	return append(paths, p)
}

// dropParams removes ";..." from every segment of p.
func dropParams(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if j := strings.IndexByte(s, ';'); j >= 0 {
			segs[i] = s[:j]
		}
	}
	return strings.Join(segs, "/")
}

// cleanPath reads backslashes as slashes and applies path.Clean to the
// rooted path.
func cleanPath(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return path.Clean(p)
}

// normHost lower-cases h and strips its port, the brackets of an IPv6
// literal and a trailing dot.
func normHost(h string) string {
	if strings.HasPrefix(h, "[") {
		if i := strings.IndexByte(h, ']'); i > 0 {
			h = h[1:i]
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 && strings.IndexByte(h, ':') == i {
		h = h[:i]
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}
