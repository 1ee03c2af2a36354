package admin

import (
	"context"
	"net/http"
	"time"
)

// RoomStatus is a room's live counters and the settings in force, with
// its schedule and how many of its fields are overridden at runtime.
type RoomStatus struct {
	statusJSON
	// Phase is "none", "prequeue" or "event"; Event names the event.
	Phase string `json:"phase"`
	Event string `json:"event,omitempty"`
	// Overrides counts the room's fields set at runtime.
	Overrides int `json:"overrides"`
	// Error says why the counters could not be read (they are zero).
	Error string `json:"error,omitempty"`
}

// StatusView is GET /api/v1/status: every room's status at one moment.
type StatusView struct {
	Time time.Time `json:"time"`
	// Version is the runtime document's version in force (0: none).
	Version int64        `json:"version"`
	Rooms   []RoomStatus `json:"rooms"`
}

// serveStatus answers every room's status: what usher top shows.
func (h *Handler) serveStatus(w http.ResponseWriter, r *http.Request) {
	now := h.now()
	out := StatusView{Time: now.UTC(), Rooms: []RoomStatus{}}
	if h.layers != nil {
		out.Version = h.layers.Current().Version
	}
	for _, room := range h.rooms() {
		sched := room.At(now)
		rs := RoomStatus{Phase: sched.Phase.String()}
		if sched.Event != nil {
			rs.Event = sched.Event.Name
		}
		if h.layers != nil {
			rs.Overrides = len(h.layers.Current().Runtime.Room(room.ID))
		}
		if h.status == nil {
			rs.Error = "status unavailable"
		} else {
			ctx, cancel := context.WithTimeout(r.Context(), statusTimeout)
			st, err := h.statusOf(ctx, room, now)
			cancel()
			if err != nil {
				rs.Error = err.Error()
				st = statusJSON{ID: room.ID, Name: room.Name, Time: now.UTC()}
			}
			rs.statusJSON = st
		}
		if rs.ID == "" {
			rs.ID, rs.Name, rs.Time = room.ID, room.Name, now.UTC()
		}
		out.Rooms = append(out.Rooms, rs)
	}
	writeJSON(w, http.StatusOK, out)
}
