package config

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/usherhq/usher"
)

// Problem is one thing wrong with a config.
type Problem struct {
	// Line is the config file's line the problem is on; 0 when unknown (a
	// Config built in code, or a problem with no place in the file).
	Line int
	// Path is the field, dotted and indexed as in the file:
	// "rooms[0].routes[1].path"; empty for the document itself.
	Path string
	// Room is the id of the room Path is in, if any and if known.
	Room string
	// Event is the name of the event Path is in, if any and if known.
	Event string
	// Rule is the description of the rule Path is in, if any and if known.
	Rule string
	// Message says what is wrong, and what was found when that helps.
	Message string
}

// String returns the problem as one line:
// `line 14: rooms[0] (sale): total_active_users: must be at least 1, got -5`.
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if where := p.where(); where != "" {
		b.WriteString(where)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return oneLine(b.String())
}

// oneLine replaces the line breaks and other control characters a value
// from the file may bring into a message, so that a problem stays one line
// (and a crafted name cannot forge another line of output).
func oneLine(s string) string {
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

// isControl reports the characters oneLine replaces: C0 and C1 controls
// and Unicode's line and paragraph separators.
func isControl(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r < 0xa0) || r == 0x2028 || r == 0x2029 || r == 0x85
}

// where renders Path, naming the room, event and rule after their index:
// "rooms[0] (sale): routes[1].path", "rooms[0] (sale): events[1] (drop):
// total_active_users", `rooms[0] (sale): rules[0] ("staff"): expression`.
func (p Problem) where() string {
	if !strings.HasPrefix(p.Path, "rooms[") {
		return p.Path
	}
	end := strings.IndexByte(p.Path, ']')
	if end < 0 {
		return p.Path
	}
	head, rest := p.Path[:end+1], strings.TrimPrefix(p.Path[end+1:], ".")
	if p.Room != "" {
		head += " (" + p.Room + ")"
	}
	if rest == "" {
		return head
	}
	rest = labelItem(rest, "events[", p.Event)
	if p.Rule != "" {
		rest = labelItem(rest, "rules[", strconv.Quote(p.Rule))
	}
	return head + ": " + rest
}

// labelItem names the list item that rest starts with, if it is an item of
// the list prefix: "events[1].name" becomes "events[1] (drop): name".
func labelItem(rest, prefix, name string) string {
	end := strings.IndexByte(rest, ']')
	if name == "" || !strings.HasPrefix(rest, prefix) || end < 0 {
		return rest
	}
	item, after := rest[:end+1]+" ("+name+")", strings.TrimPrefix(rest[end+1:], ".")
	if after == "" {
		return item
	}
	return item + ": " + after
}

// ValidationError is every problem found in a config.
type ValidationError struct {
	Problems []Problem
	// Decoding reports problems with the values' form (an unknown field, a
	// value of the wrong type) rather than their meaning; WithRuntime sets
	// it, so that the admin API can tell a malformed request (400) from a
	// well-formed one it cannot apply (422).
	Decoding bool
}

// Error returns the problems, one per line.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems as a usher.Error with code usher.EInvalid, so
// that usher.ErrorCode and usher.ErrorMessage see a bad config as bad
// input.
func (e *ValidationError) Unwrap() error {
	return &usher.Error{Code: usher.EInvalid, Message: e.Error()}
}

// report collects problems.
type report []Problem

// MaxProblems is the most problems a ValidationError lists; the last one
// then says how many more there were.
const MaxProblems = 100

// add records a problem at a place, on a line if known (else 0).
func (r *report) add(line int, at loc, format string, args ...any) {
	*r = append(*r, Problem{Line: line, Path: at.path, Room: at.room, Event: at.event, Rule: at.rule, Message: fmt.Sprintf(format, args...)})
}

// err returns the problems as a *ValidationError, or nil if there are none:
// at most MaxProblems of them, the last saying how many more there were.
func (r report) err() error {
	if len(r) == 0 {
		return nil
	}
	if len(r) > MaxProblems {
		more := len(r) - (MaxProblems - 1)
		r = append(r[:MaxProblems-1:MaxProblems-1], Problem{Message: fmt.Sprintf("and %d more problems", more)})
	}
	return &ValidationError{Problems: r}
}

// locate gives each problem without a line the line of its path, or of
// the nearest enclosing path the file has, and orders the problems by line.
func (r report) locate(lines map[string]int) {
	for i := range r {
		p := &r[i]
		for path := p.Path; p.Line == 0 && path != ""; path = parentPath(path) {
			p.Line = lines[path]
		}
	}
	slices.SortStableFunc(r, func(a, b Problem) int { return cmp.Compare(a.Line, b.Line) })
}

// parentPath returns the path that encloses path: "rooms[0].routes" for
// "rooms[0].routes[1]", "rooms[0]" for "rooms[0].routes", "" for "listen".
func parentPath(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

// loc is a place in the config: a path and the room, event and rule it is
// in.
type loc struct {
	path  string
	room  string
	event string
	rule  string
}

// field returns the place of a field of l.
func (l loc) field(name string) loc {
	if l.path == "" {
		l.path = name
	} else {
		l.path += "." + name
	}
	return l
}

// index returns the place of the i-th item of the list at l.
func (l loc) index(i int) loc {
	l.path = fmt.Sprintf("%s[%d]", l.path, i)
	return l
}

// roomLoc returns the place of the i-th room.
func roomLoc(i int, id string) loc {
	return loc{path: fmt.Sprintf("rooms[%d]", i), room: id}
}

// roomRef names the i-th room for a message: "rooms[0] (sale)".
func roomRef(i int, id string) string {
	if id == "" {
		return fmt.Sprintf("rooms[%d]", i)
	}
	return fmt.Sprintf("rooms[%d] (%s)", i, id)
}
