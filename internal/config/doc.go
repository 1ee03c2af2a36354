// Package config reads usher's YAML configuration: listeners, the state
// store, ticket keys, IP lists and rooms with their routes, settings,
// events and bypass rules.
//
// Parse decodes strictly (an unknown field, a value of the wrong type, a
// duration without a unit or a time without a zone is an error), fills in
// the defaults, and validates. Every problem it finds is reported at once,
// in a *ValidationError whose lines name the config line, the room (and
// the event or rule) and the field:
//
//	line 14: rooms[0] (sale): total_active_users: must be an integer, got "lots"
//	line 31: rooms[0] (sale): events[1] (drop): total_active_users: must be at least 1, got 0
//	line 40: rooms[0] (sale): rules[0] ("staff"): expression: 1:1: undeclared reference to 'hots' (did you mean 'host'?)
//
// Validate does no I/O and reads no globals (it compiles the bypass rules
// as the gate will); Load is Parse for a file, and also reads the
// secret_file and token_file it names and parses each custom_page_html.
// WithRuntime applies the runtime document (room fields changed through
// the admin API, kept in the store) over a config with the same field
// decoders and Validate, so that a runtime change is checked exactly as the
// file is; EncodeRoom writes a room back in the file's terms.
// Explain describes the rooms in plain words for "usher check";
// Reloadable says whether a new config can replace a running one without a
// restart; CookieDomain is the rule, shared with the gate, for the cookie
// domain of a room on several hosts.
package config
