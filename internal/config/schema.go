package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// SchemaField is one field of the config file as the decoder reads it, for
// the configuration reference (docs/configuration.md, written by
// internal/config/gen from Schema and the Go fields' doc comments).
type SchemaField struct {
	// Path is the field's place, a list's items written "[]":
	// "rooms[].events[].total_active_users".
	Path string
	// Type is what the field takes: "string", "integer", "number",
	// "boolean", "duration", "time", "mapping", "list of strings", "list
	// of mappings", "mapping of lists of strings".
	Type string
	// Default is the value a file that leaves the field out gets, as the
	// file would write it; "" when there is none or it is empty.
	Default string
	// Rule is what Validate says of a value out of its range or set, its
	// ", got ..." cut: "must be at least 1", "must be fifo, random,
	// passthrough or reject"; "" when the probe finds no rule.
	Rule string
	// GoType and GoField name the Go struct field the value goes to (the
	// struct's package path and name, and the field), for its doc
	// comment; empty when the value goes to no field of its own.
	GoType, GoField string
}

// goNames are the Go fields of the file's fields whose names differ from
// the file's by more than case and underscores.
var goNames = map[string]string{
	"ip_lists":               "IPListEntries",
	"event_start_time":       "Start",
	"event_end_time":         "End",
	"prequeue_start_time":    "PrequeueStart",
	"shuffle_at_event_start": "ShuffleAtStart",
	"latency_percentile":     "Percentile",
	"latency_sigma":          "Sigma",
	"latency_factor":         "Factor",
}

// Schema returns every field of the config file, in the order of a walk
// of the decoder's own field tables (each mapping's fields sorted by
// name): what the decoder takes, what a file that leaves a field out gets
// (Default, DefaultSettings and each block's own defaults), and what
// Validate refuses.
func Schema() []SchemaField {
	d := &decoder{lines: make(map[string]int), schema: make(map[string]map[string]field)}
	d.config(&yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}, Default())
	var fields []SchemaField
	var doc []string // the probe document: every block present, empty
	d.walkSchema(&fields, "", d.schema[""])
	// A ticket_binding block binds something, or its prefixes are not
	// read: bind the client's prefix to show their defaults.
	doc = append(doc, "rooms[].ticket_binding.client_prefix=true")
	for _, f := range fields {
		switch f.Type {
		case "mapping":
			doc = append(doc, f.Path+"={}")
		case "list of mappings":
			doc = append(doc, f.Path+"=[{}]")
		}
	}
	root := probeDocument(doc, "", "")
	c := Default()
	(&decoder{lines: make(map[string]int)}).config(root, c)
	for i := range fields {
		f := &fields[i]
		if v, ok := goValue(c, f.Path); ok {
			f.GoType, f.GoField = v.typ.PkgPath()+"."+v.typ.Name(), v.field
			if f.Type != "mapping" && f.Type != "list of mappings" {
				f.Default = formatDefault(v.value)
			}
		}
		f.Rule = probeRule(doc, f)
	}
	return fields
}

// walkSchema adds the fields of the mapping at path to out, each probed
// for its type: a mapping's and a list's items' fields follow it.
func (d *decoder) walkSchema(out *[]SchemaField, path string, fields map[string]field) {
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		at := loc{path: path}.field(name)
		f := fields[name]
		typ, inner := d.probeType(f, at)
		*out = append(*out, SchemaField{Path: strings.ReplaceAll(at.path, "[0]", "[]"), Type: typ})
		if inner != "" {
			d.walkSchema(out, inner, d.schema[inner])
		}
	}
}

// probeType finds what f takes by giving it values of each kind, and
// returns the path of its fields when it is a mapping or a list of them.
func (d *decoder) probeType(f field, at loc) (string, string) {
	try := func(n *yaml.Node, path string) (bool, string) {
		delete(d.schema, path)
		before := len(d.problems)
		f(n, at)
		if _, ok := d.schema[path]; ok {
			return true, ""
		}
		for _, p := range d.problems[before:] {
			if p.Path == at.path || p.Path == path {
				return false, p.Message
			}
		}
		return false, ""
	}
	empty := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	if ok, _ := try(empty, at.path); ok {
		return "mapping", at.path
	}
	_, msg := try(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "x"}, at.path)
	switch {
	case msg == "":
		return "string", ""
	case strings.HasPrefix(msg, "must be a mapping of list names"):
		return "mapping of lists of strings", ""
	case strings.HasPrefix(msg, "must be a list"):
		item := at.index(0).path
		list := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
		if ok, _ := try(list, item); ok {
			return "list of mappings", item
		}
		return "list of strings", ""
	}
	for prefix, typ := range map[string]string{
		"must be an integer": "integer", "must be true or false": "boolean", "must be a duration": "duration",
		"must be an RFC 3339 time": "time", "must be a number": "number",
	} {
		if strings.HasPrefix(msg, prefix) {
			return typ, ""
		}
	}
	return "string", ""
}

// probeDocument builds the document that sets each path=value of sets
// (value in YAML flow form) and, when path is set, value at path.
func probeDocument(sets []string, path, value string) *yaml.Node {
	root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	put := func(path, value string) {
		n := root
		parts := strings.Split(path, ".")
		for i, part := range parts {
			name, list := strings.CutSuffix(part, "[]")
			child := lookup(n, name)
			last := i == len(parts)-1
			if child == nil {
				if last {
					var v yaml.Node
					if err := yaml.Unmarshal([]byte(value), &v); err != nil || len(v.Content) == 0 {
						return
					}
					n.Content = append(n.Content, keyNode(name), v.Content[0])
					return
				}
				child = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				if list {
					child = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{child}}
				}
				n.Content = append(n.Content, keyNode(name), child)
			} else if last {
				return
			}
			if list {
				child = child.Content[0]
			}
			n = child
		}
	}
	if path != "" {
		put(path, value)
	}
	for _, s := range sets {
		p, v, _ := strings.Cut(s, "=")
		put(p, v)
	}
	return root
}

// The values probeRule writes to find a field's rule.
var probeValues = map[string]string{
	"integer": "-1000000", "number": "-1000000", "duration": "-1000h", "string": `"?"`,
}

// probeRule returns what Validate says of the probe value of f's type at
// f's place, in a document with every block present: the field's range or
// set, "" when Validate finds nothing or its message is about the value
// itself rather than a rule.
func probeRule(sets []string, f *SchemaField) string {
	value, ok := probeValues[f.Type]
	if !ok {
		return ""
	}
	c := Default()
	d := &decoder{lines: make(map[string]int)}
	d.config(probeDocument(sets, f.Path, value), c)
	c.applyDefaults()
	c.written = d.lines
	err := c.validate(nil, d.failed(), nil)
	v, ok := err.(*ValidationError)
	if !ok {
		return ""
	}
	for _, p := range v.Problems {
		if strings.ReplaceAll(p.Path, "[0]", "[]") != f.Path {
			continue
		}
		msg := p.Message
		if i := strings.LastIndex(msg, ", got "); i >= 0 {
			msg = msg[:i]
		}
		if !strings.HasPrefix(msg, "must") || strings.Contains(msg, strings.Trim(value, `"`)) || strings.Contains(msg, "1000h") {
			return ""
		}
		return msg
	}
	return ""
}

// goField is a Go struct field a file's field goes to.
type goField struct {
	typ   reflect.Type // the struct
	field string
	value reflect.Value
}

// goValue follows path through c, each list at its first item, a room's
// and an event's fields into their settings and overrides too, and
// returns the field the path ends at.
func goValue(c *Config, path string) (goField, bool) {
	cur := []reflect.Value{reflect.ValueOf(c).Elem()}
	// store.redis.tls is true or false (Redis.TLS), or a mapping whose
	// fields fill Redis.TLSOptions.
	if rest, ok := strings.CutPrefix(path, "store.redis.tls."); ok {
		path = "store.redis.tls_options." + rest
	}
	parts := strings.Split(path, ".")
	var found goField
	for i, part := range parts {
		name, list := strings.CutSuffix(part, "[]")
		if name == "webhooks" && i == 1 && parts[0] == "rooms[]" {
			// A room's webhooks are kept in Config.Webhooks.
			cfg := reflect.ValueOf(c).Elem()
			found = goField{typ: cfg.Type(), field: "Webhooks", value: cfg.FieldByName("Webhooks")}
			cur = []reflect.Value{found.value}
		} else {
			var ok bool
			if found, ok = fieldOf(cur, name); !ok {
				return goField{}, false
			}
			cur = []reflect.Value{found.value}
		}
		v := cur[0]
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v = reflect.New(v.Type().Elem()).Elem()
			} else {
				v = v.Elem()
			}
		}
		if list {
			if v.Kind() != reflect.Slice || v.Len() == 0 {
				return goField{}, false
			}
			v = v.Index(0)
		}
		cur = []reflect.Value{v}
		if v.Kind() == reflect.Struct {
			for _, inner := range []string{"Settings", "Overrides"} {
				if s := v.FieldByName(inner); s.IsValid() {
					cur = append(cur, s)
				}
			}
		}
	}
	if found.typ == nil {
		return goField{}, false
	}
	return found, true
}

// fieldOf finds the Go field of the file's field name in the first of vs
// that has it.
func fieldOf(vs []reflect.Value, name string) (goField, bool) {
	want := goNames[name]
	for _, v := range vs {
		if v.Kind() != reflect.Struct {
			continue
		}
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			if sf.Name == want || (want == "" && strings.EqualFold(sf.Name, strings.ReplaceAll(name, "_", ""))) {
				return goField{typ: t, field: sf.Name, value: v.Field(i)}, true
			}
		}
	}
	return goField{}, false
}

// formatDefault writes a default value as the file would: "" for a zero
// or empty one.
func formatDefault(v reflect.Value) string {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if !v.IsValid() || v.IsZero() || (v.CanInt() && v.Int() < 0) {
		return "" // zero, or a mark that the block needs the field
	}
	if d, ok := v.Interface().(time.Duration); ok {
		return formatDuration(d)
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		if v.Len() == 0 {
			return ""
		}
	case reflect.Struct:
		return ""
	}
	return fmt.Sprint(v.Interface())
}
