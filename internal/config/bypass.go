package config

import (
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/rules"
)

// ipListNamePattern is the shape of an IP list's name.
var ipListNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// checkIPLists checks the names and entries of ip_lists, in name order.
func (c *Config) checkIPLists(r *report) {
	for _, name := range slices.Sorted(maps.Keys(c.IPListEntries)) {
		at := loc{path: "ip_lists"}.field(name)
		if !ipListNamePattern.MatchString(name) {
			r.add(0, at, "a list name must be 1 to 64 of A-Z, a-z, 0-9, '_' and '-', got %q", name)
		}
		for i, s := range c.IPListEntries[name] {
			if _, err := parseProxy(s); err != nil {
				r.add(0, at.index(i), "%v", err)
			}
		}
	}
}

// validHeaderName reports whether s is an HTTP field name: one or more
// token characters (RFC 9110, 5.1).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		isAlnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !isAlnum && !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

// checkRules checks a room's bypass rules: each action, then every
// expression, by compiling the rules as the gate will, against lists.
// Each compile error becomes a problem at its rule's expression.
func checkRules(r *report, rm *usher.Room, at loc, lists map[string][]netip.Prefix) {
	if len(rm.Rules) == 0 {
		return
	}
	if len(rm.Rules) > maxPerRoom {
		return
	}
	rs := make([]rules.Rule, len(rm.Rules))
	for j, rl := range rm.Rules {
		checkText(r, ruleLoc(at, j, rl.Description).field("description"), rl.Description)
		switch rl.Action {
		case "", rules.ActionBypass:
		default:
			r.add(0, ruleLoc(at, j, rl.Description).field("action"), "must be %s (the only action), got %q", rules.ActionBypass, rl.Action)
		}
		// The action is checked above; Compile sees only the expression.
		rs[j] = rules.Rule{Description: rl.Description, Expression: rl.Expression, Enabled: rl.Enabled}
	}
	_, err := rules.Compile(rs, lists)
	if err == nil {
		return
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		addRuleError(r, rm.Rules, at, e.Error())
	}
}

// addRuleError places one error of rules.Compile, which starts with the
// rule's label (`rules[1] ("staff"): expression: 1:1: ...`), at that rule:
// its expression when the error is about the expression. An error that
// names no rule is put at the room's rules.
func addRuleError(r *report, rls []usher.Rule, at loc, msg string) {
	for j, rl := range rls {
		rest, ok := strings.CutPrefix(msg, ruleLabel(j, rl.Description)+": ")
		if !ok {
			continue
		}
		rat := ruleLoc(at, j, rl.Description)
		if expr, ok := strings.CutPrefix(rest, "expression: "); ok {
			r.add(0, rat.field("expression"), "%s", expr)
			return
		}
		r.add(0, rat, "%s", rest)
		return
	}
	r.add(0, at.field("rules"), "%s", msg)
}

// ruleLabel is how rules.Compile names the j-th rule in its errors.
func ruleLabel(j int, desc string) string {
	if desc == "" {
		return loc{path: "rules"}.index(j).path
	}
	return loc{path: "rules"}.index(j).path + " (" + strconv.Quote(desc) + ")"
}

// ruleLoc returns the place of a room's j-th rule.
func ruleLoc(room loc, j int, desc string) loc {
	at := room.field("rules").index(j)
	at.rule = desc
	return at
}
