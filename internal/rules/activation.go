package rules

import (
	"net/http"
	"net/textproto"
	"net/url"
	"reflect"
	"sort"
	"strings"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/interpreter"
)

// activation gives the variables of one request to every rule. Values are
// built on first use and shared by the rules: a request that no rule asks
// about headers never pays for them.
type activation struct {
	r       *Request
	ip      ref.Val
	params  ref.Val
	headers headerMap
}

var _ interpreter.Activation = (*activation)(nil)

func (a *activation) reset(r *Request) {
	*a = activation{r: r}
	if r != nil {
		a.headers.h = r.Headers
	}
}

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	r := a.r
	switch name {
	case "ip":
		if a.ip == nil {
			s := ""
			if r.IP.IsValid() {
				s = r.IP.Unmap().WithZone("").String()
			}
			a.ip = types.String(s)
		}
		return a.ip, true
	case "host":
		return bounded(r.Host), true
	case "path":
		return bounded(r.Path), true
	case "query":
		return bounded(r.Query), true
	case "params":
		if a.params == nil {
			if len(r.Query) > MaxStringSize {
				a.params = errTooLarge
			} else {
				// ParseQuery keeps the pairs it could parse.
				vals, _ := url.ParseQuery(r.Query)
				a.params = sortedMap{types.NewMap(types.DefaultTypeAdapter, map[string][]string(vals)).(traits.Mapper)}
			}
		}
		return a.params, true
	case "method":
		return bounded(r.Method), true
	case "headers":
		return &a.headers, true
	case "user_agent":
		return bounded(r.UserAgent), true
	case "country":
		return bounded(r.Country), true
	}
	return nil, false
}

// errTooLarge is the value of a variable larger than the cost estimates
// assume: a rule that reads it fails, and a failed rule never bypasses.
var errTooLarge = types.NewErr("value larger than %d bytes", MaxStringSize)

// bounded is s as a CEL string, or errTooLarge past MaxStringSize.
func bounded(s string) ref.Val {
	if len(s) > MaxStringSize {
		return errTooLarge
	}
	return types.String(s)
}

// sortedMap is a map whose iteration visits its keys in sorted order, so
// that a rule that iterates (exists, map, ...) gives the same answer every
// time for the same request, whatever Go's map order.
type sortedMap struct{ traits.Mapper }

// Iterator implements traits.Iterable: the keys, sorted.
func (m sortedMap) Iterator() traits.Iterator {
	var keys []string
	for it := m.Mapper.Iterator(); it.HasNext() == types.True; {
		if k, ok := it.Next().(types.String); ok {
			keys = append(keys, string(k))
		}
	}
	sort.Strings(keys)
	return types.NewStringList(types.DefaultTypeAdapter, keys).(traits.Lister).Iterator()
}

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }

// headerMap is the headers variable: a map(string, string) over an
// http.Header with lower-case names. Looking up one name costs a map lookup;
// the whole map is built only when an expression iterates, sizes or
// compares it.
type headerMap struct {
	h    http.Header
	full traits.Mapper
}

var _ traits.Mapper = (*headerMap)(nil)

// lookup returns the values of header name, joined with ", ". Names are
// lower case; like http.Header.Get, lookup finds only canonical keys.
func (m *headerMap) lookup(name string) (string, bool) {
	var buf [64]byte
	var vs []string
	var ok bool
	if len(name) <= len(buf) {
		key, valid := canonicalKey(buf[:0], name)
		if !valid {
			return "", false
		}
		vs, ok = m.h[string(key)] // no allocation
	} else {
		if strings.ToLower(name) != name {
			return "", false
		}
		vs, ok = m.h[textproto.CanonicalMIMEHeaderKey(name)]
	}
	if !ok {
		return "", false
	}
	switch len(vs) {
	case 0:
		return "", true
	case 1:
		return vs[0], true
	}
	return strings.Join(vs, ", "), true
}

// canonicalKey appends the canonical form of the lower-case header name to
// buf, as textproto.CanonicalMIMEHeaderKey would give it. It reports false
// when name has an upper-case letter: the map's names are lower case.
func canonicalKey(buf []byte, name string) ([]byte, bool) {
	upper := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'A' <= c && c <= 'Z':
			return nil, false
		case !validHeaderFieldByte(c):
			// Not a valid header name: CanonicalMIMEHeaderKey leaves it alone.
			return append(buf[:0], name...), true
		case upper && 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		}
		buf = append(buf, c)
		upper = c == '-'
	}
	return buf, true
}

func (m *headerMap) materialize() traits.Mapper {
	if m.full == nil {
		out := make(map[string]string, len(m.h))
		for k := range m.h {
			lk := strings.ToLower(k)
			if v, ok := m.lookup(lk); ok {
				out[lk] = v
			}
		}
		m.full = sortedMap{types.NewStringStringMap(types.DefaultTypeAdapter, out)}
	}
	return m.full
}

// Find implements traits.Mapper.
func (m *headerMap) Find(key ref.Val) (ref.Val, bool) {
	if s, ok := key.(types.String); ok {
		if v, found := m.lookup(string(s)); found {
			return bounded(v), true
		}
		return nil, false
	}
	return m.materialize().Find(key)
}

// Get implements traits.Indexer.
func (m *headerMap) Get(key ref.Val) ref.Val {
	if s, ok := key.(types.String); ok {
		if v, found := m.lookup(string(s)); found {
			return bounded(v)
		}
	}
	return m.materialize().Get(key)
}

// Contains implements traits.Container.
func (m *headerMap) Contains(key ref.Val) ref.Val {
	if s, ok := key.(types.String); ok {
		_, found := m.lookup(string(s))
		return types.Bool(found)
	}
	return m.materialize().Contains(key)
}

// Iterator implements traits.Iterable.
func (m *headerMap) Iterator() traits.Iterator { return m.materialize().Iterator() }

// Size implements traits.Sizer.
func (m *headerMap) Size() ref.Val { return m.materialize().Size() }

// ConvertToNative implements ref.Val.
func (m *headerMap) ConvertToNative(t reflect.Type) (any, error) {
	return m.materialize().ConvertToNative(t)
}

// ConvertToType implements ref.Val.
func (m *headerMap) ConvertToType(t ref.Type) ref.Val { return m.materialize().ConvertToType(t) }

// Equal implements ref.Val.
func (m *headerMap) Equal(other ref.Val) ref.Val { return m.materialize().Equal(other) }

// Type implements ref.Val.
func (m *headerMap) Type() ref.Type { return types.MapType }

// Value implements ref.Val.
func (m *headerMap) Value() any { return m.materialize().Value() }

// validHeaderFieldByte reports whether c may appear in a header name (an
// RFC 7230 tchar), as net/textproto decides it.
func validHeaderFieldByte(c byte) bool {
	const mask = 0 |
		(1<<(10)-1)<<'0' |
		(1<<(26)-1)<<'a' |
		(1<<(26)-1)<<'A' |
		1<<'!' | 1<<'#' | 1<<'$' | 1<<'%' | 1<<'&' | 1<<'\'' | 1<<'*' |
		1<<'+' | 1<<'-' | 1<<'.' | 1<<'^' | 1<<'_' | 1<<'`' | 1<<'|' | 1<<'~'
	return ((uint64(1)<<c)&(mask&(1<<64-1)) |
		(uint64(1)<<(c-64))&(mask>>64)) != 0
}
