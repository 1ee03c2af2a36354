package gate

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzRequestPath: whatever request target a client sends, readPath never
// panics; a path read as usher's own is literally under OwnPrefix, letter
// case included, in a spelling that an origin's normaliser leaves as it
// is; any other path is routed on readings that include what an origin
// that decodes, reads backslashes as slashes and resolves dot segments
// would see, and one that reads as usher's prefix is never usher's.
func FuzzRequestPath(f *testing.F) {
	for _, s := range []string{"/", "/__usher/assets/usher.svg", "/__USHER/../shop", "/%5f%5fusher/x", "/x/..%2f__usher/",
		"//__usher/", "/__usher;x/../shop", "/__usher/..;/shop", "/__usher/%2e%2e/shop", "/shop%2F..%2F__usher%2Fx",
		"/a\\..\\__usher/x", "/__usher", "/__usher/", "/__usher//x", "/__usher/./x", "/%2e%2e/__usher/x", "/__usher%00/x",
		"/s%68op;jsessionid=1/x", "/__usher/status/shop?x=/__usher/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || u.Host != "" || !strings.HasPrefix(target, "/") {
			return // not a path a server would route
		}
		rd, err := readPath(u)
		esc := u.EscapedPath()
		literal := esc == "/__usher" || strings.HasPrefix(esc, OwnPrefix)
		if err != nil {
			return // refused: nothing decided, nothing proxied
		}
		if len(rd.paths) == 0 {
			t.Fatalf("%q: no reading", target)
		}
		if rd.own {
			if !literal || u.Path != esc {
				t.Fatalf("%q read as usher's own, but its path %q is not literally under %s", target, esc, OwnPrefix)
			}
			if n := originNormal(esc); strings.TrimSuffix(n, "/") != strings.TrimSuffix(esc, "/") {
				t.Fatalf("%q read as usher's own, but an origin reads it as %q", target, n)
			}
			if !strings.HasPrefix(esc, OwnPrefix[:len(OwnPrefix)-1]+rd.rest) && esc != OwnPrefix+rd.rest {
				t.Fatalf("%q: rest %q is not what follows the prefix", target, rd.rest)
			}
			return
		}
		if literal {
			t.Fatalf("%q is literally under %s but was not read as usher's own, nor refused", target, OwnPrefix)
		}
		dec, err := url.PathUnescape(esc)
		if err != nil {
			t.Fatalf("%q: readable (%v) although its path does not decode: %v", target, rd.paths, err)
		}
		want := originNormal(dec)
		found := false
		for _, p := range rd.paths {
			if p == want {
				found = true
			}
		}
		if !found {
			t.Fatalf("%q: an origin reads %q, not among the readings %q", target, want, rd.paths)
		}
		if rd.paths[0] != want {
			t.Fatalf("%q: the decision's path %q is not the origin's %q", target, rd.paths[0], want)
		}
	})
}

// originNormal is the path an origin that reads backslashes as slashes,
// merges repeated slashes and resolves dot segments (RFC 3986 5.2.4) would
// see in the decoded path p: written apart from cleanPath, to check it.
func originNormal(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	var out []string
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, seg)
		}
	}
	return "/" + strings.Join(out, "/")
}
