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
	"github.com/usherhq/usher/internal/notify"
)

// routeAPI registers the /api/v1 paths. The /v1 paths of earlier
// versions stay as they were.
func (h *Handler) routeAPI(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/status", h.serveStatus)
	mux.HandleFunc("GET /api/v1/rooms/{id}/status", h.serveRoomStatus)
	mux.HandleFunc("GET /api/v1/rooms/{id}/analytics", h.serveAnalytics)
	mux.HandleFunc("POST /api/v1/rooms/{id}/invites", h.serveNewInvite)
	if h.events != nil {
		mux.Handle("GET /api/v1/stream", h.eventSlots.guard(h.events.StreamHandler(h.roomExists, func(w http.ResponseWriter, e *notify.StreamError) {
			code := usher.EInvalid
			switch e.Status {
			case http.StatusNotFound:
				code = usher.ENotFound
			case http.StatusServiceUnavailable:
				code = usher.EUnavailable
			}
			writeJSON(w, e.Status, errorJSON{Error: errorBody{Code: code, Message: e.Message, Field: e.Param}})
		})))
	}
	if h.events != nil {
		mux.HandleFunc("GET /api/v1/webhooks", h.serveWebhooks)
	}
	if h.layers == nil {
		return
	}
	mux.HandleFunc("GET /api/v1/rooms", h.serveAPIRooms)
	mux.HandleFunc("GET /api/v1/rooms/{id}", h.serveAPIRoom)
	mux.HandleFunc("PATCH /api/v1/rooms/{id}", h.servePatchRoom)
	mux.HandleFunc("DELETE /api/v1/rooms/{id}/overrides", h.serveResetRoom)
	// GET, POST /api/v1/rooms/{id}/events; GET, PATCH, DELETE
	// /api/v1/rooms/{id}/events/{name}; the same for rules/{index}.
	eventsList.route(mux, h)
	rulesList.route(mux, h)
	mux.HandleFunc("GET /api/v1/overrides", h.serveOverrides)
	mux.HandleFunc("GET /api/v1/audit", h.serveAudit)
}

// WebhooksView is GET /api/v1/webhooks: every room's webhooks (secrets
// and URL paths left out) with their delivery counts.
type WebhooksView struct {
	Webhooks []notify.WebhookStatus `json:"webhooks"`
}

// serveWebhooks lists the webhooks in force, ?room= keeping one room's.
func (h *Handler) serveWebhooks(w http.ResponseWriter, r *http.Request) {
	room := r.URL.Query().Get("room")
	if room != "" && !h.roomExists(room) {
		noRoom(room).write(w)
		return
	}
	out := WebhooksView{Webhooks: []notify.WebhookStatus{}}
	for _, s := range h.events.Status() {
		if room == "" || s.Room == room {
			out.Webhooks = append(out.Webhooks, s)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// roomExists reports whether a room with id is in force.
func (h *Handler) roomExists(id string) bool {
	for _, rm := range h.rooms() {
		if rm.ID == id {
			return true
		}
	}
	return false
}

// RoomView is a room as the API shows it: its settings in force, which of
// them are overridden at runtime, its events and its rules, each with the
// ETag that a change of it must send in If-Match.
type RoomView struct {
	// ID is the room's id.
	ID string `json:"id"`
	// ETag is the tag of the room's settings (PATCH and DELETE overrides
	// send it).
	ETag string `json:"etag"`
	// Version is the runtime document's version in force on the node that
	// answered (0: none).
	Version int64 `json:"version"`
	// Settings are the room's fields in force, as the config file writes
	// them (durations as "5m"), but id, events and rules.
	Settings map[string]any `json:"settings"`
	// Overrides are the fields set at runtime, by field as
	// RoomOverrides names them.
	Overrides map[string]OverrideView `json:"overrides"`
	// Events and Rules are the room's events and rules in force.
	Events EventsView `json:"events"`
	Rules  RulesView  `json:"rules"`
	// NotInForce, when not empty, says why the room's overrides are not in
	// force on this node: they did not fit its config file when it
	// started. Drop them (DELETE .../overrides) or fix the file.
	NotInForce []string `json:"not_in_force,omitempty"`
}

// OverrideView is one field set at runtime.
type OverrideView struct {
	// Value is the runtime value, File the config file's (null when the
	// file has no such room).
	Value any `json:"value"`
	File  any `json:"file"`
	// At is when it was set, By the name of the token that set it.
	At time.Time `json:"at"`
	By string    `json:"by"`
}

// EventsView is a room's events, in order of start. Each event is its
// fields as the file writes them, with its "etag".
type EventsView struct {
	// ETag is the tag of the list (POST to the list sends it).
	ETag   string           `json:"etag"`
	Events []map[string]any `json:"events"`
}

// RulesView is a room's rules, in order. Each rule is its fields as the
// file writes them, with its "index" and "etag".
type RulesView struct {
	// ETag is the tag of the list (POST to the list sends it).
	ETag  string           `json:"etag"`
	Rules []map[string]any `json:"rules"`
}

// RoomsView is GET /api/v1/rooms.
type RoomsView struct {
	Version int64      `json:"version"`
	Rooms   []RoomView `json:"rooms"`
}

// OverridesView is GET /api/v1/overrides: every room's runtime overrides.
type OverridesView struct {
	// Version is the runtime document's version in force (0: none).
	Version int64 `json:"version"`
	// Rooms holds the overrides of each room that has some, by room id.
	Rooms map[string]map[string]OverrideView `json:"rooms"`
	// Orphans are rooms with overrides that the config file does not have
	// (kept, applied to nothing).
	Orphans []string `json:"orphans"`
}

// settingsOf returns a room's encoded fields but id, events and rules.
func settingsOf(enc map[string]any) map[string]any {
	s := maps.Clone(enc)
	delete(s, "id")
	delete(s, "events")
	delete(s, "rules")
	return s
}

// encodeRoom returns a room of cfg as the file writes it, its webhooks
// included without their secrets (config.EncodeWebhooks).
func encodeRoom(cfg *config.Config, rm *usher.Room) map[string]any {
	enc := config.EncodeRoom(rm)
	enc["webhooks"] = cfg.EncodeWebhooks(rm.ID)
	return enc
}

// settingsTag is the tag of a room's settings: a hash of what is shown,
// and of when its webhooks were set at runtime (their secrets are not
// shown, but a new secret is a change).
func settingsTag(settings map[string]any, rt *config.Runtime, id string) string {
	if o, ok := rt.Room(id)["webhooks"]; ok {
		return etagOf([]any{settings, o.At.UTC()})
	}
	return etagOf(settings)
}

// redactWebhooks shows a list of webhooks as written at runtime without
// what is secret: a secret as "(set)", a URL as scheme and host.
func redactWebhooks(v any) any {
	list, ok := v.([]any)
	if !ok {
		return v
	}
	out := make([]any, 0, len(list))
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			out = append(out, e)
			continue
		}
		m = maps.Clone(m)
		for _, k := range []string{"secret", "secret_file"} {
			if _, set := m[k]; set {
				m[k] = config.SecretShown
			}
		}
		if u, ok := m["url"].(string); ok {
			m["url"] = config.WebhookTarget(u)
		}
		out = append(out, m)
	}
	return out
}

// roomView returns the view of the room with id in snap; false when there
// is none.
func roomView(snap *Snapshot, id string) (RoomView, bool) {
	i := roomIndex(snap.Effective, id)
	if i < 0 {
		return RoomView{}, false
	}
	rm := &snap.Effective.Rooms[i]
	settings := settingsOf(encodeRoom(snap.Effective, rm))
	return RoomView{
		ID:         rm.ID,
		ETag:       settingsTag(settings, snap.Runtime, rm.ID),
		Version:    snap.Version,
		Settings:   settings,
		Overrides:  overridesView(snap, id),
		Events:     eventsView(rm),
		Rules:      rulesView(rm),
		NotInForce: snap.Unfit[id],
	}, true
}

// overridesView returns a room's runtime overrides with the file's values.
func overridesView(snap *Snapshot, id string) map[string]OverrideView {
	out := make(map[string]OverrideView)
	ov := snap.Runtime.Room(id)
	if len(ov) == 0 {
		return out
	}
	var file map[string]any
	if i := roomIndex(snap.File, id); i >= 0 {
		file = encodeRoom(snap.File, &snap.File.Rooms[i])
	}
	for name, o := range ov {
		var v any
		_ = json.Unmarshal(o.Value, &v)
		if name == "webhooks" {
			v = redactWebhooks(v)
		}
		out[name] = OverrideView{Value: v, File: fieldValue(file, name), At: o.At.UTC(), By: o.By}
	}
	return out
}

// fieldValue returns a field of an encoded room, as RoomOverrides names
// it ("cookie_attributes.samesite" is a key of a block); nil when absent.
func fieldValue(enc map[string]any, name string) any {
	top, sub, dotted := strings.Cut(name, ".")
	v := enc[top]
	if !dotted {
		return v
	}
	m, _ := v.(map[string]any)
	return m[sub]
}

// roomIndex returns the index of the room with id in c, or -1.
func roomIndex(c *config.Config, id string) int {
	if c == nil {
		return -1
	}
	return slices.IndexFunc(c.Rooms, func(r usher.Room) bool { return r.ID == id })
}

func (h *Handler) serveAPIRooms(w http.ResponseWriter, r *http.Request) {
	snap := h.layers.Current()
	out := RoomsView{Version: snap.Version, Rooms: make([]RoomView, 0, len(snap.Effective.Rooms))}
	for i := range snap.Effective.Rooms {
		v, _ := roomView(snap, snap.Effective.Rooms[i].ID)
		out.Rooms = append(out.Rooms, v)
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) serveAPIRoom(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	v, ok := roomView(h.layers.Current(), id)
	if !ok {
		noRoom(id).write(w)
		return
	}
	w.Header().Set("ETag", v.ETag)
	writeJSON(w, http.StatusOK, v)
}

func (h *Handler) serveOverrides(w http.ResponseWriter, r *http.Request) {
	snap := h.layers.Current()
	out := OverridesView{Version: snap.Version, Rooms: make(map[string]map[string]OverrideView), Orphans: snap.File.Orphans(snap.Runtime)}
	if out.Orphans == nil {
		out.Orphans = []string{}
	}
	if snap.Runtime != nil {
		for id := range snap.Runtime.Rooms {
			out.Rooms[id] = overridesView(snap, id)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// noRoom is the answer about a room that does not exist.
func noRoom(id string) *apiError {
	return &apiError{status: http.StatusNotFound, code: usher.ENotFound, message: fmt.Sprintf("no room %q", id)}
}
