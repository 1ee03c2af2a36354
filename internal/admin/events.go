package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/config"
)

// A change to one event or rule sets the room's whole list as a runtime
// override (the "events" or "rules" field): the list in force, edited.
// The list is then validated as the file's would be (times, overrides,
// overlaps, expressions).

// setList sets field's override to list.
func setList(ov config.RoomOverrides, field string, list []any, now time.Time, by string) (config.RoomOverrides, *apiError) {
	raw, err := json.Marshal(list)
	if err != nil {
		return nil, invalid(field, "%s: %v", field, err)
	}
	setOverride(ov, field, raw, now, by)
	return ov, nil
}

// rawFields returns the object's fields as a map that marshals as the
// object.
func (o object) rawFields() map[string]json.RawMessage { return o.fields }

// merge writes the object's fields over m: null removes a field.
func (o object) merge(m map[string]any) map[string]any {
	for _, k := range o.keys {
		if isNull(o.fields[k]) {
			delete(m, k)
		} else {
			m[k] = o.fields[k]
		}
	}
	return m
}

// stringField returns the object's field key when it is a JSON string;
// a field that is there but not a string is a 400, since the API names
// events by it.
func (o object) stringField(key string) (string, bool, *apiError) {
	var s string
	raw, ok := o.fields[key]
	if !ok {
		return "", false, nil
	}
	if json.Unmarshal(raw, &s) != nil {
		return "", false, invalid(key, "body: %s: must be a string, got %s", key, compactRaw(raw))
	}
	return s, true, nil
}

// eventNamed reports whether rm has an event named name other than the
// one at skip.
func eventNamed(rm *usher.Room, name string, skip int) bool {
	for j := range rm.Events {
		if j != skip && rm.Events[j].Name == name {
			return true
		}
	}
	return false
}

// eventAnswer writes the event named name from the room in force.
func eventAnswer(id, name string, status int) func(w http.ResponseWriter, snap *Snapshot) {
	return func(w http.ResponseWriter, snap *Snapshot) {
		i := roomIndex(snap.Effective, id)
		if i < 0 {
			noRoom(id).write(w)
			return
		}
		rm := &snap.Effective.Rooms[i]
		j, aerr := findEvent(rm, name)
		if aerr != nil {
			aerr.write(w)
			return
		}
		v := eventsView(rm).Events[j]
		w.Header().Set("ETag", v["etag"].(string))
		if status == http.StatusCreated {
			w.Header().Set("Location", "/api/v1/rooms/"+url.PathEscape(id)+"/events/"+url.PathEscape(name))
		}
		writeJSON(w, status, v)
	}
}

// eventAfter returns the event named name in rm, as the file writes it;
// nil when there is none.
func eventAfter(name string) func(rm *usher.Room) any {
	return func(rm *usher.Room) any {
		for j := range rm.Events {
			if rm.Events[j].Name == name {
				return config.EncodeEvent(&rm.Events[j])
			}
		}
		return nil
	}
}

// eventsTag is the tag of a room's list of events.
func eventsTag(rm *usher.Room) (string, *apiError) {
	return etagOf(config.EncodeEvents(rm.Events)), nil
}

// eventTag returns the tag of the room's event named name.
func eventTag(name string) func(rm *usher.Room) (string, *apiError) {
	return func(rm *usher.Room) (string, *apiError) {
		j, aerr := findEvent(rm, name)
		if aerr != nil {
			return "", aerr
		}
		return etagOf(config.EncodeEvent(&rm.Events[j])), nil
	}
}

// serveCreateEvent adds an event to a room: a JSON object of its fields
// as the config file writes them.
func (h *Handler) serveCreateEvent(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, aerr := readObject(w, r)
	if aerr != nil {
		aerr.write(w)
		return
	}
	name, _, aerr := body.stringField("name")
	if aerr != nil {
		aerr.write(w)
		return
	}
	h.run(w, r, change{
		room: id, what: fmt.Sprintf("the events of room %q", id), action: "event.create", target: "rooms/" + id + "/events/" + name,
		tag: eventsTag,
		edit: func(rm *usher.Room, ref string, ov config.RoomOverrides, now time.Time, by string) (config.RoomOverrides, any, *apiError) {
			if name != "" && eventNamed(rm, name, -1) {
				return nil, nil, &apiError{status: http.StatusUnprocessableEntity, code: usher.EInvalid, field: "name",
					message: fmt.Sprintf("%s: events: an event named %q exists already (PATCH /api/v1/rooms/%s/events/%s changes it)", ref, name, id, url.PathEscape(name))}
			}
			ov, aerr := setList(ov, "events", append(config.EncodeEvents(rm.Events), body.rawFields()), now, by)
			return ov, nil, aerr
		},
		after:  eventAfter(name),
		answer: eventAnswer(id, name, http.StatusCreated),
	})
}

// servePatchEvent changes fields of an event: null removes an optional
// field (an override, the pre-queue).
func (h *Handler) servePatchEvent(w http.ResponseWriter, r *http.Request) {
	id, name := r.PathValue("id"), r.PathValue("name")
	body, aerr := readObject(w, r)
	if aerr != nil {
		aerr.write(w)
		return
	}
	newName := name
	s, ok, aerr := body.stringField("name")
	if aerr != nil {
		aerr.write(w)
		return
	}
	if ok {
		newName = s
	}
	h.run(w, r, change{
		room: id, what: fmt.Sprintf("event %q of room %q", name, id), action: "event.update", target: "rooms/" + id + "/events/" + name,
		tag: eventTag(name),
		edit: func(rm *usher.Room, ref string, ov config.RoomOverrides, now time.Time, by string) (config.RoomOverrides, any, *apiError) {
			j, aerr := findEvent(rm, name)
			if aerr != nil {
				return nil, nil, aerr
			}
			if newName != name && eventNamed(rm, newName, j) {
				return nil, nil, &apiError{status: http.StatusUnprocessableEntity, code: usher.EInvalid, field: "name",
					message: fmt.Sprintf("%s: events[%d] (%s): name: another event is named %q", ref, j, name, newName)}
			}
			list := config.EncodeEvents(rm.Events)
			before := list[j]
			list[j] = body.merge(config.EncodeEvent(&rm.Events[j]))
			ov, aerr = setList(ov, "events", list, now, by)
			return ov, before, aerr
		},
		after:  eventAfter(newName),
		answer: eventAnswer(id, newName, http.StatusOK),
	})
}

// serveDeleteEvent removes an event from a room.
func (h *Handler) serveDeleteEvent(w http.ResponseWriter, r *http.Request) {
	id, name := r.PathValue("id"), r.PathValue("name")
	h.run(w, r, change{
		room: id, what: fmt.Sprintf("event %q of room %q", name, id), action: "event.delete", target: "rooms/" + id + "/events/" + name,
		tag: eventTag(name),
		edit: func(rm *usher.Room, _ string, ov config.RoomOverrides, now time.Time, by string) (config.RoomOverrides, any, *apiError) {
			j, aerr := findEvent(rm, name)
			if aerr != nil {
				return nil, nil, aerr
			}
			list := config.EncodeEvents(rm.Events)
			before := list[j]
			ov, aerr = setList(ov, "events", append(list[:j:j], list[j+1:]...), now, by)
			return ov, before, aerr
		},
		after:  func(*usher.Room) any { return nil },
		answer: func(w http.ResponseWriter, _ *Snapshot) { w.WriteHeader(http.StatusNoContent) },
	})
}
