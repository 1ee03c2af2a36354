package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher"
)

// Runtime is the runtime document: room settings changed through the
// admin API, kept in the store and applied over the config file. For each
// field a room overrides, the runtime value replaces the file's; the
// fields it does not override keep following the file, reloads included.
// The zero value (and nil) overrides nothing.
type Runtime struct {
	// Rooms holds each room's overrides, by room id. Overrides of a room
	// the file does not have are kept but apply to nothing (see Orphans).
	Rooms map[string]RoomOverrides `json:"rooms,omitempty"`
}

// RoomOverrides are one room's overrides by field: a room field as the
// file names it ("total_active_users", "routes", "events", "rules"), or
// one key of cookie_attributes ("cookie_attributes.samesite"), the one
// block whose keys override one by one. Other blocks (client_limit,
// proof_of_work, ticket_binding) and lists (routes, events, rules) are
// replaced whole, as writing them in the file does.
type RoomOverrides map[string]Override

// Override is one field's runtime value.
type Override struct {
	// Value is the field's value in JSON, written as in the file: a
	// duration as "5m", a time as "2026-12-01T10:00:00Z", a block as an
	// object.
	Value json.RawMessage `json:"value"`
	// At is when the value was set.
	At time.Time `json:"at"`
	// By names the admin token that set it.
	By string `json:"by"`
}

// ParseRuntime decodes a runtime document as the store keeps it; empty
// data is an empty document.
func ParseRuntime(data []byte) (*Runtime, error) {
	rt := &Runtime{}
	if len(bytes.TrimSpace(data)) == 0 {
		return rt, nil
	}
	if err := json.Unmarshal(data, rt); err != nil {
		return nil, fmt.Errorf("runtime document: %w", err)
	}
	return rt, nil
}

// Marshal encodes the document for the store.
func (rt *Runtime) Marshal() ([]byte, error) {
	if rt == nil {
		return []byte(`{}`), nil
	}
	return json.Marshal(rt)
}

// Clone returns a copy of rt that shares nothing mutable with it.
func (rt *Runtime) Clone() *Runtime {
	out := &Runtime{}
	if rt == nil || len(rt.Rooms) == 0 {
		return out
	}
	out.Rooms = make(map[string]RoomOverrides, len(rt.Rooms))
	for id, ov := range rt.Rooms {
		out.Rooms[id] = maps.Clone(ov)
	}
	return out
}

// Room returns a room's overrides; nil when it has none.
func (rt *Runtime) Room(id string) RoomOverrides {
	if rt == nil {
		return nil
	}
	return rt.Rooms[id]
}

// SetRoom replaces a room's overrides; none removes the room.
func (rt *Runtime) SetRoom(id string, ov RoomOverrides) {
	if len(ov) == 0 {
		delete(rt.Rooms, id)
		return
	}
	if rt.Rooms == nil {
		rt.Rooms = make(map[string]RoomOverrides)
	}
	rt.Rooms[id] = ov
}

// Orphans returns the ids, sorted, of the rooms rt overrides that c does
// not have.
func (c *Config) Orphans(rt *Runtime) []string {
	if rt == nil {
		return nil
	}
	var out []string
	for id := range rt.Rooms {
		if c.roomIndex(id) < 0 {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// shardsFixed says why a room's shards cannot change while usher runs.
const shardsFixed = "a room's shards cannot change at runtime: its waiters are spread over them as they arrive, and those already waiting cannot be moved" +
	" (change it in the config file and restart usher once nobody waits in the room)"

// roomIndex returns the index of the room with id, or -1.
func (c *Config) roomIndex(id string) int {
	return slices.IndexFunc(c.Rooms, func(r usher.Room) bool { return r.ID == id })
}

// RoomFields returns the names of a room's fields in the file, sorted.
func RoomFields() []string {
	d := &decoder{}
	return slices.Sorted(maps.Keys(d.roomFields(&usher.Room{})))
}

// OverridableField reports whether a runtime override may set a room
// field (as RoomOverrides names it), and if not, why. Every field of a
// room may change at runtime but its id, which names its counters, and
// its shards, over which its line is spread.
func OverridableField(name string) (bool, string) {
	top, sub, dotted := strings.Cut(name, ".")
	switch {
	case name == "webhooks":
		return true, ""
	case top == "id" && !dotted:
		return false, "a room's id cannot change at runtime: its counters and tickets are kept by id (add a room to the config file instead)"
	case top == "shards" && !dotted:
		return false, shardsFixed
	case dotted && top == "cookie_attributes" && (sub == "samesite" || sub == "secure"):
		return true, ""
	case dotted:
		return false, fmt.Sprintf("unknown field %q", name)
	case slices.Contains(RoomFields(), name):
		return true, ""
	}
	return false, fmt.Sprintf("unknown field %q", name)
}

// WithRuntime returns the config in force with rt over c: each room that
// rt overrides decoded again with its overrides written over the file's
// values, by the same field decoders as the file, then the whole config
// validated as Load validates a file (custom pages the overrides name are
// read relative to the config file's directory, when Load read c). c does
// not change. The error is a *ValidationError whose problems name the
// room and field as for the file, without lines: every problem of every
// override at once, those with the values' form (an unknown field, a
// value of the wrong type) and those Validate finds, as Parse reports a
// file's; its Decoding is set when any problem is with the values' form.
// Overrides of rooms c does not have are left out.
func (c *Config) WithRuntime(rt *Runtime) (*Config, error) {
	out := *c
	out.Rooms = slices.Clone(c.Rooms)
	if rt == nil || len(rt.Rooms) == 0 {
		return &out, nil
	}
	var decoding, pages report
	failed := make(map[string]bool)
	out.written = maps.Clone(c.written)
	if out.written == nil {
		out.written = make(map[string]int)
	}
	for i := range out.Rooms {
		rm := &out.Rooms[i]
		ov := rt.Rooms[rm.ID]
		if len(ov) == 0 {
			continue
		}
		at := roomLoc(i, rm.ID)
		node, r := ov.node(at)
		decoding = append(decoding, r...)
		rm.Routes, rm.Events, rm.Rules = slices.Clone(rm.Routes), slices.Clone(rm.Events), slices.Clone(rm.Rules)
		d := &decoder{lines: make(map[string]int), runtime: true}
		fields := d.roomFields(rm)
		var hooks []Webhook
		_, setHooks := ov["webhooks"]
		if setHooks {
			fields["webhooks"] = d.webhooks(&hooks, i)
		}
		d.mapping(node, at, fields)
		decoding = append(decoding, d.problems...)
		maps.Copy(failed, d.failed())
		for _, p := range r {
			if p.Path != at.path { // not an unknown field
				failed[p.Path] = true
			}
		}
		for path := range d.lines {
			out.written[path] = 0
		}
		if setHooks {
			out.Webhooks = replaceWebhooks(out.Webhooks, i, rm.ID, hooks)
		}
		if c.dir == "" {
			continue
		}
		if _, ok := ov["custom_page_html"]; ok && strings.TrimSpace(rm.CustomPageHTML) != "" {
			rm.CustomPageHTML = loadPage(&pages, c.dir, rm.CustomPageHTML, at.field("custom_page_html"))
		}
		if _, ok := ov["events"]; ok {
			for j := range rm.Events {
				e := &rm.Events[j]
				if p := e.Overrides.CustomPageHTML; p != nil && strings.TrimSpace(*p) != "" {
					abs := loadPage(&pages, c.dir, *p, eventLoc(at, j, e.Name).field("custom_page_html"))
					e.Overrides.CustomPageHTML = &abs
				}
			}
		}
	}
	out.applyDefaults()
	if err := out.validate(append(decoding, pages...), failed, nil); err != nil {
		err.(*ValidationError).Decoding = len(decoding) > 0
		return nil, err
	}
	out.sortEvents()
	return &out, nil
}

// node returns the overrides as the YAML mapping the room decoder reads:
// a dotted field as a key of its block. A field that cannot be overridden
// or a value that is not JSON is a problem at at.
func (ov RoomOverrides) node(at loc) (*yaml.Node, report) {
	var r report
	root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	blocks := make(map[string]*yaml.Node)
	for _, name := range slices.Sorted(maps.Keys(ov)) {
		if ok, why := OverridableField(name); !ok {
			top, _, _ := strings.Cut(name, ".")
			if strings.HasPrefix(why, "unknown field") {
				r.add(0, at, "%s", why)
			} else {
				r.add(0, at.field(top), "%s", why)
			}
			continue
		}
		v, err := jsonNode(ov[name].Value)
		if err != nil {
			r.add(0, at.field(name), "%v", err)
			continue
		}
		top, sub, dotted := strings.Cut(name, ".")
		if !dotted {
			root.Content = append(root.Content, keyNode(name), v)
			continue
		}
		b := blocks[top]
		if b == nil {
			b = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			blocks[top] = b
			root.Content = append(root.Content, keyNode(top), b)
		}
		b.Content = append(b.Content, keyNode(sub), v)
	}
	return root, r
}

func keyNode(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

// maxJSONDepth bounds the nesting of a JSON value: no field goes deeper
// than a few levels.
const maxJSONDepth = 32

// jsonNode converts one JSON value into the YAML node the decoder reads,
// so that a runtime value is checked by the file's own field decoders: a
// number without fraction or exponent is an integer (!!int), any other a
// float, a string stays a string whatever it holds. A key set twice in an
// object is an error, as in the file.
func jsonNode(data []byte) (*yaml.Node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := jsonValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("must be one JSON value, found more")
	}
	return n, nil
}

func jsonValue(dec *json.Decoder, depth int) (*yaml.Node, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested more than %d levels deep", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			seen := make(map[string]bool)
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("not valid JSON: %v", err)
				}
				key, _ := kt.(string)
				if seen[key] {
					return nil, fmt.Errorf("field %q is set twice", key)
				}
				seen[key] = true
				val, err := jsonValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, keyNode(key), val)
			}
			_, err := dec.Token()
			return n, err
		}
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for dec.More() {
			val, err := jsonValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, val)
		}
		_, err := dec.Token()
		return n, err
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Style: yaml.DoubleQuotedStyle}, nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(v.String(), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(v)}, nil
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
}
