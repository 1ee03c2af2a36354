package admin

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/config"
)

// A room's events and rules are lists served alike: GET the list, POST
// an item to it, GET, PATCH and DELETE one item. A change to one item
// sets the room's whole list as a runtime override (the "events" or
// "rules" field): the list in force, edited. The list is then validated
// as the file's would be (times, overrides, overlaps, expressions).
// listKind describes one such list; its handlers are generic over the
// item's type.
type listKind[T any] struct {
	// field is the room's field and the path's segment: "events".
	field string
	// noun names an item in audit actions: "event" (event.create).
	noun string
	// param is the path's wildcard naming an item: "name", "index".
	param string
	// byIndex: an item is named by its place (rules), else by its name
	// (events, whose name a POST or PATCH may set).
	byIndex bool
	// items returns the room's list in force.
	items func(rm *usher.Room) []T
	// encode returns an item as the file writes it.
	encode func(*T) map[string]any
	// tag returns the tag of item j, encoded as enc.
	tag func(j int, enc map[string]any) string
	// find returns the index of the item key names (as the path writes
	// it): 404 when there is none.
	find func(rm *usher.Room, key string) (int, *apiError)
	// label names the item key names in messages: `event "drop"`.
	label func(key string) string
	// unique, when set, checks that the item at j (-1: a new one) may be
	// named name.
	unique func(rm *usher.Room, ref, room string, j int, key, name string) *apiError
	// view wraps the list's tag and items as GET answers them.
	view func(etag string, items []map[string]any) any
}

// encodeAll returns the room's list as the file writes it.
func (k *listKind[T]) encodeAll(rm *usher.Room) []any {
	items := k.items(rm)
	out := make([]any, 0, len(items))
	for j := range items {
		out = append(out, k.encode(&items[j]))
	}
	return out
}

// views returns the list's tag and its items as GET shows them: each
// with its "etag", and its "index" when items are named by place.
func (k *listKind[T]) views(rm *usher.Room) (string, []map[string]any) {
	list := k.encodeAll(rm)
	out := make([]map[string]any, 0, len(list))
	for j, e := range list {
		m := maps.Clone(e.(map[string]any))
		if k.byIndex {
			m["index"] = j
		}
		m["etag"] = k.tag(j, e.(map[string]any))
		out = append(out, m)
	}
	return etagOf(list), out
}

// listTag is the tag of the room's list.
func (k *listKind[T]) listTag(rm *usher.Room) (string, *apiError) {
	return etagOf(k.encodeAll(rm)), nil
}

// itemTag returns the tag of the item key names.
func (k *listKind[T]) itemTag(key string) func(rm *usher.Room) (string, *apiError) {
	return func(rm *usher.Room) (string, *apiError) {
		j, aerr := k.find(rm, key)
		if aerr != nil {
			return "", aerr
		}
		return k.tag(j, k.encode(&k.items(rm)[j])), nil
	}
}

// route registers the list's paths.
func (k *listKind[T]) route(mux *http.ServeMux, h *Handler) {
	list := "/api/v1/rooms/{id}/" + k.field
	item := list + "/{" + k.param + "}"
	mux.HandleFunc("GET "+list, func(w http.ResponseWriter, r *http.Request) { k.serveList(h, w, r) })
	mux.HandleFunc("POST "+list, func(w http.ResponseWriter, r *http.Request) { k.serveCreate(h, w, r) })
	mux.HandleFunc("GET "+item, func(w http.ResponseWriter, r *http.Request) { k.serveItem(h, w, r) })
	mux.HandleFunc("PATCH "+item, func(w http.ResponseWriter, r *http.Request) { k.servePatch(h, w, r) })
	mux.HandleFunc("DELETE "+item, func(w http.ResponseWriter, r *http.Request) { k.serveDelete(h, w, r) })
}

// roomOf returns the room with id in force, or writes a 404.
func roomOf(w http.ResponseWriter, snap *Snapshot, id string) *usher.Room {
	i := roomIndex(snap.Effective, id)
	if i < 0 {
		noRoom(id).write(w)
		return nil
	}
	return &snap.Effective.Rooms[i]
}

func (k *listKind[T]) serveList(h *Handler, w http.ResponseWriter, r *http.Request) {
	rm := roomOf(w, h.layers.Current(), r.PathValue("id"))
	if rm == nil {
		return
	}
	etag, items := k.views(rm)
	w.Header().Set("ETag", etag)
	writeJSON(w, http.StatusOK, k.view(etag, items))
}

func (k *listKind[T]) serveItem(h *Handler, w http.ResponseWriter, r *http.Request) {
	rm := roomOf(w, h.layers.Current(), r.PathValue("id"))
	if rm == nil {
		return
	}
	k.writeItem(w, rm, "", r.PathValue(k.param), http.StatusOK)
}

// writeItem answers the item key names in rm with status; a 201 says
// where it is.
func (k *listKind[T]) writeItem(w http.ResponseWriter, rm *usher.Room, room, key string, status int) {
	j, aerr := k.find(rm, key)
	if aerr != nil {
		aerr.write(w)
		return
	}
	_, items := k.views(rm)
	v := items[j]
	w.Header().Set("ETag", v["etag"].(string))
	if status == http.StatusCreated {
		if k.byIndex {
			key = strconv.Itoa(j)
		}
		w.Header().Set("Location", "/api/v1/rooms/"+url.PathEscape(room)+"/"+k.field+"/"+url.PathEscape(key))
	}
	writeJSON(w, status, v)
}

// answer writes the item *key names from the room in force.
func (k *listKind[T]) answer(id string, key *string, status int) func(w http.ResponseWriter, snap *Snapshot) {
	return func(w http.ResponseWriter, snap *Snapshot) {
		if rm := roomOf(w, snap, id); rm != nil {
			k.writeItem(w, rm, id, *key, status)
		}
	}
}

// after returns the item *key names in rm as the file writes it (the
// audit log's after); nil when there is none.
func (k *listKind[T]) after(key *string) func(rm *usher.Room) any {
	return func(rm *usher.Room) any {
		j, aerr := k.find(rm, *key)
		if aerr != nil {
			return nil
		}
		return k.encode(&k.items(rm)[j])
	}
}

// name returns the name a POST or PATCH body gives the item (def when it
// gives none); a name that is not a string is a 400. Items named by
// place have none.
func (k *listKind[T]) name(body object, def string) (string, *apiError) {
	if k.byIndex {
		return def, nil
	}
	s, ok, aerr := body.stringField("name")
	if aerr != nil || !ok {
		return def, aerr
	}
	return s, nil
}

// serveCreate adds an item at the end of a room's list: a JSON object of
// its fields as the config file writes them.
func (k *listKind[T]) serveCreate(h *Handler, w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, aerr := readObject(w, r)
	if aerr != nil {
		aerr.write(w)
		return
	}
	name, aerr := k.name(body, "")
	if aerr != nil {
		aerr.write(w)
		return
	}
	target := "rooms/" + id + "/" + k.field
	if !k.byIndex {
		target += "/" + name
	}
	key := name
	h.run(w, r, change{
		room: id, what: fmt.Sprintf("the %s of room %q", k.field, id), action: k.noun + ".create", target: target,
		tag: k.listTag,
		edit: func(rm *usher.Room, ref string, ov config.RoomOverrides, now time.Time, by string) (config.RoomOverrides, any, *apiError) {
			if k.unique != nil {
				if aerr := k.unique(rm, ref, id, -1, "", name); aerr != nil {
					return nil, nil, aerr
				}
			}
			if k.byIndex {
				key = strconv.Itoa(len(k.items(rm)))
			}
			ov, aerr := setList(ov, k.field, append(k.encodeAll(rm), body.rawFields()), now, by)
			return ov, nil, aerr
		},
		after:  k.after(&key),
		answer: k.answer(id, &key, http.StatusCreated),
	})
}

// servePatch changes fields of an item: null removes an optional field
// (an event's override or pre-queue, a rule's description).
func (k *listKind[T]) servePatch(h *Handler, w http.ResponseWriter, r *http.Request) {
	id, key := r.PathValue("id"), r.PathValue(k.param)
	body, aerr := readObject(w, r)
	if aerr != nil {
		aerr.write(w)
		return
	}
	newKey, aerr := k.name(body, key)
	if aerr != nil {
		aerr.write(w)
		return
	}
	h.run(w, r, change{
		room: id, what: fmt.Sprintf("%s of room %q", k.label(key), id), action: k.noun + ".update", target: "rooms/" + id + "/" + k.field + "/" + key,
		tag: k.itemTag(key),
		edit: func(rm *usher.Room, ref string, ov config.RoomOverrides, now time.Time, by string) (config.RoomOverrides, any, *apiError) {
			j, aerr := k.find(rm, key)
			if aerr != nil {
				return nil, nil, aerr
			}
			if k.unique != nil && newKey != key {
				if aerr := k.unique(rm, ref, id, j, key, newKey); aerr != nil {
					return nil, nil, aerr
				}
			}
			list := k.encodeAll(rm)
			before := list[j]
			list[j] = body.merge(k.encode(&k.items(rm)[j]))
			ov, aerr = setList(ov, k.field, list, now, by)
			return ov, before, aerr
		},
		after:  k.after(&newKey),
		answer: k.answer(id, &newKey, http.StatusOK),
	})
}

// serveDelete removes an item from a room's list (rules after it move up
// one place).
func (k *listKind[T]) serveDelete(h *Handler, w http.ResponseWriter, r *http.Request) {
	id, key := r.PathValue("id"), r.PathValue(k.param)
	h.run(w, r, change{
		room: id, what: fmt.Sprintf("%s of room %q", k.label(key), id), action: k.noun + ".delete", target: "rooms/" + id + "/" + k.field + "/" + key,
		tag: k.itemTag(key),
		edit: func(rm *usher.Room, _ string, ov config.RoomOverrides, now time.Time, by string) (config.RoomOverrides, any, *apiError) {
			j, aerr := k.find(rm, key)
			if aerr != nil {
				return nil, nil, aerr
			}
			list := k.encodeAll(rm)
			before := list[j]
			ov, aerr = setList(ov, k.field, append(list[:j:j], list[j+1:]...), now, by)
			return ov, before, aerr
		},
		after:  func(*usher.Room) any { return nil },
		answer: func(w http.ResponseWriter, _ *Snapshot) { w.WriteHeader(http.StatusNoContent) },
	})
}

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
