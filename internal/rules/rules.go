package rules

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
)

// ActionBypass is the action of a bypass rule, and the only action.
const ActionBypass = "bypass_waiting_room"

// Rule is one bypass rule as configured.
type Rule struct {
	// Description names the rule in errors, logs and Bypass results.
	// Empty means the rule is named by its index, "rules[2]".
	Description string

	// Expression is a CEL expression over the request with a bool result;
	// see the package documentation for variables and functions.
	Expression string

	// Action is what a true expression does: ActionBypass.
	// Empty means ActionBypass.
	Action string

	// Enabled rules are run. Disabled rules are still compiled, so a broken
	// rule fails at load time, but never run.
	Enabled bool
}

// Request is what rules see of a request. The gate fills it once per request.
type Request struct {
	// IP is the client address (after trusted-proxy handling).
	// The zero value means unknown: ip is "" and no CIDR matches.
	IP netip.Addr

	// Host is the host name, lower case, without port.
	Host string

	// Path is the cleaned path the room matched.
	Path string

	// OtherPaths are the other readings of the request path that routing
	// considers (an encoded slash kept in its segment, path parameters
	// dropped, the letters folded for a room whose paths ignore case): a
	// rule bypasses only when it holds for Path and every one of them, so
	// that no reading an origin may make walks around the room.
	OtherPaths []string

	// Query is the raw query string, without "?".
	Query string

	// Method is the request method.
	Method string

	// UserAgent is the User-Agent header.
	UserAgent string

	// Country is the country code from the configured country header, or "".
	Country string

	// Headers are the request headers with canonical names, as net/http
	// provides them; like http.Header.Get, rules do not see names in other
	// forms. Rules see the names in lower case.
	Headers http.Header
}

// Set is a compiled list of rules. The zero value and nil bypass nothing.
// A Set is safe for concurrent use.
type Set struct {
	progs []program // enabled rules, in order
}

type program struct {
	prg  cel.Program
	name string // description, or "rules[i]"
}

// Compile compiles rules, checking each expression against the variables and
// functions of the package documentation. lists are the named IP lists that
// in_ip_list can refer to; Compile does not keep the caller's slices.
//
// Every rule is compiled, enabled or not; only enabled rules are run. The
// error, if any, joins one error per problem (see [errors.Join]), each
// starting with the rule's index and description:
//
//	rules[1] ("staff"): expression: 1:1: undeclared reference to 'hots' (did you mean 'host'?)
func Compile(rules []Rule, lists map[string][]netip.Prefix) (*Set, error) {
	var errs []error
	own := make(map[string][]netip.Prefix, len(lists))
	for _, name := range slices.Sorted(maps.Keys(lists)) {
		ps := make([]netip.Prefix, 0, len(lists[name]))
		for i, p := range lists[name] {
			if !p.IsValid() {
				errs = append(errs, fmt.Errorf("lists[%q][%d]: invalid prefix", name, i))
				continue
			}
			ps = append(ps, p.Masked())
		}
		own[name] = ps
	}
	if len(rules) == 0 {
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		return &Set{}, nil
	}

	c := &compiler{lists: own, cidrs: make(map[string]netip.Prefix)}
	env, err := c.env()
	if err != nil {
		return nil, fmt.Errorf("rules: build environment: %w", err)
	}
	s := &Set{}
	for i, r := range rules {
		label := ruleLabel(i, r.Description)
		switch r.Action {
		case ActionBypass, "":
		default:
			errs = append(errs, fmt.Errorf("%s: unknown action %q (want %q)", label, r.Action, ActionBypass))
		}
		prg, perrs := c.compile(env, r.Expression)
		for _, e := range perrs {
			errs = append(errs, fmt.Errorf("%s: expression: %s", label, e))
		}
		if len(perrs) > 0 || !r.Enabled {
			continue
		}
		name := r.Description
		if name == "" {
			name = label
		}
		s.progs = append(s.progs, program{prg: prg, name: name})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

func ruleLabel(i int, desc string) string {
	if desc == "" {
		return fmt.Sprintf("rules[%d]", i)
	}
	return fmt.Sprintf("rules[%d] (%q)", i, desc)
}

// Len reports how many rules are enabled.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.progs)
}

// Bypass reports whether r bypasses the waiting room, and if so the
// description of the first enabled rule that is true (its index,
// "rules[2]", when the description is empty). A rule is true when it holds
// for r's Path and for each of its OtherPaths. A rule whose evaluation
// fails is false: errors never bypass. A nil Set or Request bypasses
// nothing.
func (s *Set) Bypass(r *Request) (bool, string) {
	if s == nil || r == nil || len(s.progs) == 0 {
		return false, ""
	}
	a := activationPool.Get().(*activation)
	defer func() {
		a.reset(nil)
		activationPool.Put(a)
	}()
	if len(r.OtherPaths) == 0 {
		a.reset(r)
		for i := range s.progs {
			if s.progs[i].eval(a) {
				return true, s.progs[i].name
			}
		}
		return false, ""
	}
	reading := *r
	for i := range s.progs {
		holds := true
		for j := -1; holds && j < len(r.OtherPaths); j++ {
			reading.Path = r.Path
			if j >= 0 {
				reading.Path = r.OtherPaths[j]
			}
			a.reset(&reading)
			holds = s.progs[i].eval(a)
		}
		if holds {
			return true, s.progs[i].name
		}
	}
	return false, ""
}

var activationPool = sync.Pool{New: func() any { return new(activation) }}

// eval runs one rule; anything but a plain true, a panic included, is false.
func (p *program) eval(a *activation) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	out, _, err := p.prg.Eval(a)
	if err != nil {
		return false
	}
	b, isBool := out.(types.Bool)
	return isBool && bool(b)
}
