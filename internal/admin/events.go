package admin

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/config"
)

// eventsList is a room's events, named by their names
// (/api/v1/rooms/{id}/events/{name}), in order of start.
var eventsList = &listKind[usher.Event]{
	field: "events", noun: "event", param: "name",
	items:  func(rm *usher.Room) []usher.Event { return rm.Events },
	encode: config.EncodeEvent,
	tag:    func(_ int, enc map[string]any) string { return etagOf(enc) },
	find:   findEvent,
	label:  func(name string) string { return fmt.Sprintf("event %q", name) },
	unique: func(rm *usher.Room, ref, room string, j int, key, name string) *apiError {
		if (j < 0 && name == "") || !eventNamed(rm, name, j) {
			return nil
		}
		msg := fmt.Sprintf("%s: events: an event named %q exists already (PATCH /api/v1/rooms/%s/events/%s changes it)", ref, name, room, url.PathEscape(name))
		if j >= 0 {
			msg = fmt.Sprintf("%s: events[%d] (%s): name: another event is named %q", ref, j, key, name)
		}
		return &apiError{status: http.StatusUnprocessableEntity, code: usher.EInvalid, field: "name", message: msg}
	},
	view: func(etag string, items []map[string]any) any { return EventsView{ETag: etag, Events: items} },
}

// eventsView returns a room's events with their tags.
func eventsView(rm *usher.Room) EventsView {
	etag, items := eventsList.views(rm)
	return EventsView{ETag: etag, Events: items}
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

// findEvent returns the index of the room's event named name: 404 when
// there is none, 409 when several have the name.
func findEvent(rm *usher.Room, name string) (int, *apiError) {
	found := -1
	for j := range rm.Events {
		if rm.Events[j].Name != name {
			continue
		}
		if found >= 0 {
			return -1, &apiError{status: http.StatusConflict, code: usher.EConflict, field: "name",
				message: fmt.Sprintf("room %q has several events named %q: rename them in the config file", rm.ID, name)}
		}
		found = j
	}
	if found < 0 {
		return -1, &apiError{status: http.StatusNotFound, code: usher.ENotFound,
			message: fmt.Sprintf("room %q has no event named %q", rm.ID, name)}
	}
	return found, nil
}
