// Package config reads usher's YAML configuration: listeners, the state
// store, ticket keys and rooms.
//
// Parse decodes strictly (an unknown field, a value of the wrong type or a
// duration without a unit is an error), fills in the defaults, and
// validates. Every problem it finds is reported at once, in a
// *ValidationError whose lines name the config line, the room and the field:
//
//	line 14: rooms[0] (sale): total_active_users: must be an integer, got "lots"
//
// Validate does no I/O and reads no globals; Load is Parse for a file, and
// also reads the secret_file and token_file it names. Explain describes the
// rooms in plain words for "usher check".
package config
