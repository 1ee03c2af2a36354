package admin

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/config"
)

// roomTag is the tag of a room's settings (not its events or rules).
func roomTag(rm *usher.Room) (string, *apiError) {
	return etagOf(settingsOf(config.EncodeRoom(rm))), nil
}

// answerRoom writes the room's view from the snapshot in force.
func answerRoom(id string) func(w http.ResponseWriter, snap *Snapshot) {
	return func(w http.ResponseWriter, snap *Snapshot) {
		v, ok := roomView(snap, id)
		if !ok {
			noRoom(id).write(w)
			return
		}
		w.Header().Set("ETag", v.ETag)
		writeJSON(w, http.StatusOK, v)
	}
}

// servePatchRoom sets room fields at runtime: a JSON object of fields as
// the config file writes them; null drops a field's override (back to the
// file's value). cookie_attributes overrides key by key.
func (h *Handler) servePatchRoom(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, aerr := readObject(w, r)
	if aerr != nil {
		aerr.write(w)
		return
	}
	if len(body.keys) == 0 {
		invalid("", "body: name at least one field to change, like {\"queue_all\": true}").write(w)
		return
	}
	h.run(w, r, change{
		room: id, what: fmt.Sprintf("room %q", id), action: "room.update", target: "rooms/" + id,
		tag: roomTag,
		edit: func(rm *usher.Room, ref string, ov config.RoomOverrides, now time.Time, by string) (config.RoomOverrides, any, *apiError) {
			enc := config.EncodeRoom(rm)
			before := make(map[string]any)
			for _, key := range body.keys {
				raw := body.fields[key]
				if aerr := patchable(ref, id, key); aerr != nil {
					return nil, nil, aerr
				}
				before[key] = enc[key]
				parts, aerr := splitField(ref, key, raw)
				if aerr != nil {
					return nil, nil, aerr
				}
				for _, name := range slices.Sorted(maps.Keys(parts)) {
					if v := parts[name]; isNull(v) {
						delete(ov, name)
					} else {
						setOverride(ov, name, v, now, by)
					}
				}
			}
			return ov, before, nil
		},
		after: func(rm *usher.Room) any {
			enc := config.EncodeRoom(rm)
			after := make(map[string]any)
			for _, key := range body.keys {
				after[key] = enc[key]
			}
			return after
		},
		answer: answerRoom(id),
	})
}

// patchable checks that a PATCH of a room may name key.
func patchable(ref, id, key string) *apiError {
	switch key {
	case "events", "rules":
		return invalid(key, "%s: %s: change a room's %s one by one at /api/v1/rooms/%s/%s", ref, key, key, id, key)
	}
	if strings.Contains(key, ".") {
		return invalid(key, "%s: unknown field %q (write a block as an object: {\"cookie_attributes\": {\"samesite\": \"strict\"}})", ref, key)
	}
	if ok, why := config.OverridableField(key); !ok {
		if strings.HasPrefix(why, "unknown field") {
			return invalid(key, "%s: %s", ref, why)
		}
		return invalid(key, "%s: %s: %s", ref, key, why)
	}
	return nil
}

// splitField returns the overrides a PATCH field sets: itself, or for
// cookie_attributes each key it names (null: both).
func splitField(ref, key string, raw json.RawMessage) (map[string]json.RawMessage, *apiError) {
	if key != "cookie_attributes" {
		return map[string]json.RawMessage{key: raw}, nil
	}
	if isNull(raw) {
		return map[string]json.RawMessage{"cookie_attributes.samesite": raw, "cookie_attributes.secure": raw}, nil
	}
	o, aerr := parseObject(raw)
	if aerr != nil {
		return nil, invalid(key, "%s: cookie_attributes: must be a mapping like {\"samesite\": \"strict\"}, got %s", ref, compactRaw(raw))
	}
	out := make(map[string]json.RawMessage)
	for _, k := range o.keys {
		if k != "samesite" && k != "secure" {
			return nil, invalid(key+"."+k, "%s: cookie_attributes: unknown field %q", ref, k)
		}
		out[key+"."+k] = o.fields[k]
	}
	return out, nil
}

// serveResetRoom drops every runtime override of a room: its settings,
// events and rules follow the config file again.
func (h *Handler) serveResetRoom(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var dropped []string
	h.run(w, r, change{
		room: id, what: fmt.Sprintf("room %q", id), action: "room.reset", target: "rooms/" + id,
		tag: roomTag,
		edit: func(rm *usher.Room, _ string, ov config.RoomOverrides, _ time.Time, _ string) (config.RoomOverrides, any, *apiError) {
			enc := config.EncodeRoom(rm)
			dropped = slices.Sorted(maps.Keys(ov))
			before := make(map[string]any)
			for _, name := range dropped {
				before[name] = fieldValue(enc, name)
			}
			return nil, before, nil
		},
		after: func(rm *usher.Room) any {
			enc := config.EncodeRoom(rm)
			after := make(map[string]any)
			for _, name := range dropped {
				after[name] = fieldValue(enc, name)
			}
			return after
		},
		answer: answerRoom(id),
	})
}
