package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher"
)

// decoder walks a YAML node tree into Go values, recording a problem (with
// its line and path) for every value it cannot take and the line of every
// field it sees.
type decoder struct {
	problems  report
	soft      map[int]bool    // indexes in problems of unknown or repeated keys: no value failed there
	misspelt  map[string]bool // the paths of the fields unknown keys are likely misspellings of
	suggested int             // unknown keys a field was looked for
	lines     map[string]int
	nodes     int  // values decoded so far (aliases count each time)
	tooBig    bool // maxNodes was passed: stop decoding
	runtime   bool // decoding runtime overrides, not the file
	// schema, when not nil, records the fields of every mapping decoded,
	// by path (see Schema).
	schema map[string]map[string]field
}

// maxNodes bounds the values a document may expand to: aliases repeat
// what they name, and a small file of aliases to aliases could otherwise
// make the decoder (and the checks after it) walk millions of values.
const maxNodes = 100_000

// budget counts n more values and reports whether decoding may go on.
func (d *decoder) budget(n *yaml.Node, at loc, count int) bool {
	if d.tooBig {
		return false
	}
	d.nodes += count
	if d.nodes > maxNodes {
		d.tooBig = true
		d.problems.add(n.Line, at, "the document expands to more than %d values (aliases repeat what they name): use fewer aliases or split the config", maxNodes)
		return false
	}
	return true
}

// softProblem records a problem with a key rather than a value (an
// unknown or repeated key): the mapping it is in still decoded, so the
// checks of its other fields still run.
func (d *decoder) softProblem(line int, at loc, format string, args ...any) {
	if d.soft == nil {
		d.soft = make(map[int]bool)
	}
	d.soft[len(d.problems)] = true
	d.problems.add(line, at, format, args...)
}

// unknown records an unknown key k of the mapping at at, suggesting the
// field it is likely a misspelling of. That field then counts as failed:
// it is left out because of the misspelling, and "required" there would
// be noise.
func (d *decoder) unknown(k *yaml.Node, at loc, fields map[string]field) {
	best := ""
	if d.suggested < MaxProblems { // past it, the problems are not shown
		d.suggested++
		best = suggest(k.Value, fields)
	}
	if best == "" {
		d.softProblem(k.Line, at, "unknown field %q", k.Value)
		return
	}
	d.softProblem(k.Line, at, "unknown field %q (did you mean %q?)", k.Value, best)
	if d.misspelt == nil {
		d.misspelt = make(map[string]bool)
	}
	d.misspelt[at.field(best).path] = true
}

// failed returns the paths of the values that did not decode: each was
// left as it was before (its default, or zero), so Validate's problems
// at them, inside them, or naming them beside them are noise.
func (d *decoder) failed() map[string]bool {
	out := make(map[string]bool)
	for path := range d.misspelt {
		out[path] = true
	}
	for i, p := range d.problems {
		if !d.soft[i] {
			out[p.Path] = true
		}
	}
	return out
}

// field decodes the value of one field at its place.
type field func(n *yaml.Node, at loc)

// readDocument parses data as one YAML document and returns its root, nil
// for an empty document.
func readDocument(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxError(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, syntaxError(err)
	default:
		var r report
		r.add(next.Line, loc{}, "the file must hold one YAML document, found another")
		return nil, r.err()
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a YAML parser error into a *ValidationError.
func syntaxError(err error) error {
	var r report
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		r.add(line, loc{}, "%s", m[2])
		return r.err()
	}
	r.add(0, loc{}, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
	return r.err()
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// isNull reports whether n is an explicit or empty null, which leaves a
// field unset.
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe shows a node in a message: a quoted string, a bare number, or
// the kind of a collection.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int", "!!float", "!!bool", "!!null":
			if strings.IndexFunc(n.Value, isControl) < 0 {
				return n.Value
			}
		}
		return strconv.Quote(n.Value)
	}
	return "an unexpected node"
}

// lookup returns the value of a mapping's key, or nil.
func lookup(n *yaml.Node, key string) *yaml.Node {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return resolve(n.Content[i+1])
		}
	}
	return nil
}

// mapping decodes a mapping whose keys must all be in fields. A null value
// leaves its field unset.
func (d *decoder) mapping(n *yaml.Node, at loc, fields map[string]field) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		d.problems.add(n.Line, at, "must be a mapping, got %s", describe(n))
		return
	}
	if !d.budget(n, at, len(n.Content)/2) {
		return
	}
	if d.schema != nil {
		d.schema[at.path] = fields
	}
	seen := make(map[string]int)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if first, dup := seen[k.Value]; dup {
			d.softProblem(k.Line, at, "field %q is set twice (first on line %d)", k.Value, first)
			continue
		}
		seen[k.Value] = k.Line
		f, ok := fields[k.Value]
		if !ok {
			d.unknown(k, at, fields)
			continue
		}
		fat := at.field(k.Value)
		d.lines[fat.path] = k.Line
		if !isNull(v) {
			f(v, fat)
		}
	}
}

// list decodes a list, calling item for each entry.
func (d *decoder) list(n *yaml.Node, at loc, item func(n *yaml.Node, at loc)) {
	if n.Kind != yaml.SequenceNode {
		d.problems.add(n.Line, at, "must be a list, got %s", describe(n))
		return
	}
	if !d.budget(n, at, len(n.Content)) {
		return
	}
	for i, c := range n.Content {
		c = resolve(c)
		iat := at.index(i)
		d.lines[iat.path] = c.Line
		item(c, iat)
	}
}

// text decodes any scalar into dst, as written.
func (d *decoder) text(dst *string) field {
	return func(n *yaml.Node, at loc) {
		if n.Kind != yaml.ScalarNode {
			d.problems.add(n.Line, at, "must be a string, got %s", describe(n))
			return
		}
		*dst = n.Value
	}
}

// texts decodes a list of scalars into dst.
func (d *decoder) texts(dst *[]string) field {
	return func(n *yaml.Node, at loc) {
		*dst = nil
		d.list(n, at, func(n *yaml.Node, at loc) {
			var s string
			d.text(&s)(n, at)
			*dst = append(*dst, s)
		})
	}
}

// integer decodes an integer into dst.
func (d *decoder) integer(dst *int) field {
	return func(n *yaml.Node, at loc) {
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			d.problems.add(n.Line, at, "must be an integer, got %s", describe(n))
			return
		}
		var v int
		if err := n.Decode(&v); err != nil {
			d.problems.add(n.Line, at, "must be an integer that fits in %d bits, got %s", strconv.IntSize, describe(n))
			return
		}
		*dst = v
	}
}

// boolean decodes true or false into dst.
func (d *decoder) boolean(dst *bool) field {
	return func(n *yaml.Node, at loc) {
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			d.problems.add(n.Line, at, "must be true or false, got %s", describe(n))
			return
		}
		var v bool
		if err := n.Decode(&v); err != nil {
			d.problems.add(n.Line, at, "must be true or false, got %s", describe(n))
			return
		}
		*dst = v
	}
}

// duration decodes a Go duration string ("90s", "5m") into dst. A bare
// number is refused: Cloudflare counts session_duration in minutes, Go
// durations need a unit, and guessing would be wrong half the time.
func (d *decoder) duration(dst *time.Duration) field {
	return func(n *yaml.Node, at loc) {
		if n.Kind != yaml.ScalarNode {
			d.problems.add(n.Line, at, "must be a duration like \"90s\" or \"5m\", got %s", describe(n))
			return
		}
		switch n.ShortTag() {
		case "!!int", "!!float":
			d.problems.add(n.Line, at, "must be a duration with a unit, got %s: add one, like \"%sm\" or \"%ss\"", n.Value, n.Value, n.Value)
			return
		}
		v, err := time.ParseDuration(n.Value)
		if err != nil {
			d.problems.add(n.Line, at, "must be a duration like \"90s\" or \"5m\", got %s", describe(n))
			return
		}
		*dst = v
	}
}

// optional decodes a field into a new value with dec, and points dst at it
// only when it decoded without a problem: an override that is left out
// stays nil.
func optional[T any](d *decoder, dec func(*T) field, dst **T) field {
	return func(n *yaml.Node, at loc) {
		before := len(d.problems)
		v := new(T)
		dec(v)(n, at)
		if len(d.problems) == before {
			*dst = v
		}
	}
}

// method decodes a queueing method as written; Validate checks it.
func (d *decoder) method(dst *usher.QueueingMethod) field {
	return d.text((*string)(dst))
}

// page decodes custom_page_html: a path that must not be empty (leaving
// the field out is how to keep the default page).
func (d *decoder) page(dst *string) field {
	return func(n *yaml.Node, at loc) {
		var s string
		before := len(d.problems)
		d.text(&s)(n, at)
		if len(d.problems) != before {
			return
		}
		if strings.TrimSpace(s) == "" {
			d.problems.add(n.Line, at, "%s", emptyPageMessage)
			return
		}
		*dst = s
	}
}

// emptyPageMessage is the problem with a custom_page_html that is set but
// empty.
const emptyPageMessage = "must name a template file, got \"\" (leave custom_page_html out for the default page)"

// timestamp decodes an RFC 3339 time with a zone, "2026-12-01T10:00:00Z" or
// "2026-12-01T11:00:00+01:00", into dst.
func (d *decoder) timestamp(dst *time.Time) field {
	return func(n *yaml.Node, at loc) {
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!timestamp") {
			d.problems.add(n.Line, at, "must be an RFC 3339 time like \"2026-12-01T10:00:00Z\", got %s", describe(n))
			return
		}
		t, msg := parseTime(n.Value)
		if msg != "" {
			d.problems.add(n.Line, at, "%s", msg)
			return
		}
		*dst = t
	}
}

// parseTime parses an RFC 3339 time, returning why s is not one, or "".
func parseTime(s string) (time.Time, string) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, ""
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04", "2006-01-02 15:04"} {
		if _, err := time.Parse(layout, s); err == nil {
			return time.Time{}, fmt.Sprintf("has no time zone, got %q: add Z for UTC or an offset, like \"2026-12-01T10:00:00Z\" or \"2026-12-01T11:00:00+01:00\"", s)
		}
	}
	if _, err := time.Parse(time.DateOnly, s); err == nil {
		return time.Time{}, fmt.Sprintf("must be a date and a time with a zone, like \"%sT10:00:00Z\", got %q", s, s)
	}
	return time.Time{}, fmt.Sprintf("must be an RFC 3339 time like \"2026-12-01T10:00:00Z\", got %q", s)
}

// ipLists decodes ip_lists: a mapping of list names to lists of addresses
// and CIDR prefixes. A null list is an empty one.
func (d *decoder) ipLists(dst *map[string][]string) field {
	return func(n *yaml.Node, at loc) {
		if n.Kind != yaml.MappingNode {
			d.problems.add(n.Line, at, "must be a mapping of list names to lists of IP addresses and CIDR prefixes, got %s", describe(n))
			return
		}
		lists := make(map[string][]string)
		seen := make(map[string]int)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], resolve(n.Content[i+1])
			if first, dup := seen[k.Value]; dup {
				d.softProblem(k.Line, at, "list %q is set twice (first on line %d)", k.Value, first)
				continue
			}
			seen[k.Value] = k.Line
			lat := at.field(k.Value)
			d.lines[lat.path] = k.Line
			var entries []string
			if !isNull(v) {
				d.texts(&entries)(v, lat)
			}
			lists[k.Value] = entries
		}
		*dst = lists
	}
}
