package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/usherhq/usher"
)

// statusTimeout bounds one room status call made for an API request.
const statusTimeout = 5 * time.Second

type roomsJSON struct {
	Rooms []roomJSON `json:"rooms"`
}

type roomJSON struct {
	ID       string       `json:"id"`
	Name     string       `json:"name"`
	Origin   string       `json:"origin,omitempty"`
	Routes   []routeJSON  `json:"routes"`
	Settings settingsJSON `json:"settings"`
}

type routeJSON struct {
	Host string `json:"host"`
	Path string `json:"path"`
}

type settingsJSON struct {
	TotalActiveUsers        int                  `json:"total_active_users"`
	NewUsersPerMinute       int                  `json:"new_users_per_minute"`
	SessionDurationSeconds  float64              `json:"session_duration_seconds"`
	DisableSessionRenewal   bool                 `json:"disable_session_renewal"`
	QueueingMethod          string               `json:"queueing_method"`
	QueueAll                bool                 `json:"queue_all"`
	Suspended               bool                 `json:"suspended"`
	QueueingStatusCode      int                  `json:"queueing_status_code"`
	JSONResponseEnabled     bool                 `json:"json_response_enabled"`
	CookieSuffix            string               `json:"cookie_suffix"`
	CookieAttributes        cookieAttributesJSON `json:"cookie_attributes"`
	CustomPageHTML          string               `json:"custom_page_html,omitempty"`
	DefaultTemplateLanguage string               `json:"default_template_language"`
	RefreshIntervalSeconds  float64              `json:"refresh_interval_seconds"`
}

type cookieAttributesJSON struct {
	SameSite string `json:"samesite"`
	Secure   string `json:"secure"`
}

type statusJSON struct {
	ID                     string    `json:"id"`
	Name                   string    `json:"name"`
	Active                 int64     `json:"active"`
	Waiting                int64     `json:"waiting"`
	AdmittedLastMinute     int64     `json:"admitted_last_minute"`
	Slots                  int64     `json:"slots"`
	TotalActiveUsers       int       `json:"total_active_users"`
	NewUsersPerMinute      int       `json:"new_users_per_minute"`
	SessionDurationSeconds float64   `json:"session_duration_seconds"`
	RefreshIntervalSeconds float64   `json:"refresh_interval_seconds"`
	QueueingMethod         string    `json:"queueing_method"`
	QueueAll               bool      `json:"queue_all"`
	Suspended              bool      `json:"suspended"`
	Time                   time.Time `json:"time"`
}

func (h *Handler) serveRooms(w http.ResponseWriter, r *http.Request) {
	rooms := h.rooms()
	out := roomsJSON{Rooms: make([]roomJSON, 0, len(rooms))}
	for _, room := range rooms {
		out.Rooms = append(out.Rooms, newRoomJSON(room))
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) serveRoomStatus(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	room := h.findRoom(id)
	if room == nil {
		writeError(w, http.StatusNotFound, usher.ENotFound, fmt.Sprintf("no room %q", id))
		return
	}
	if h.status == nil {
		writeError(w, http.StatusServiceUnavailable, usher.EUnavailable,
			fmt.Sprintf("status of room %q is unavailable", id))
		return
	}
	now := h.now()
	ctx, cancel := context.WithTimeout(r.Context(), statusTimeout)
	defer cancel()
	st, err := h.statusOf(ctx, room, now)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, usher.EUnavailable, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// statusOf returns a room's status at now; the error is a message for the
// client (the cause is logged).
func (h *Handler) statusOf(ctx context.Context, room *usher.Room, now time.Time) (statusJSON, error) {
	id := room.ID
	stats, err := h.status(ctx, room, now)
	if err != nil {
		h.logger.LogAttrs(ctx, slog.LevelError, "room status",
			slog.String("room", id), slog.Any("err", err))
		msg := fmt.Sprintf("status of room %q is unavailable", id)
		if e := (*usher.Error)(nil); errors.As(err, &e) {
			msg = fmt.Sprintf("status of room %q: %s", id, e.Message)
		}
		return statusJSON{}, errors.New(msg)
	}
	// The settings in force now: a running event's over the room's.
	set := room.At(now).Settings
	return statusJSON{
		ID:                     room.ID,
		Name:                   room.Name,
		Active:                 stats.Active,
		Waiting:                stats.Waiting,
		AdmittedLastMinute:     stats.AdmittedLastMinute,
		Slots:                  stats.Slots,
		TotalActiveUsers:       set.TotalActiveUsers,
		NewUsersPerMinute:      set.NewUsersPerMinute,
		SessionDurationSeconds: set.SessionDuration.Seconds(),
		RefreshIntervalSeconds: set.RefreshInterval.Seconds(),
		QueueingMethod:         queueingMethod(set.QueueingMethod),
		QueueAll:               set.QueueAll,
		Suspended:              set.Suspended,
		Time:                   now.UTC(),
	}, nil
}

// findRoom returns the current room with id, or nil.
func (h *Handler) findRoom(id string) *usher.Room {
	for _, room := range h.rooms() {
		if room != nil && room.ID == id {
			return room
		}
	}
	return nil
}

func newRoomJSON(room *usher.Room) roomJSON {
	routes := make([]routeJSON, 0, len(room.Routes))
	for _, rt := range room.Routes {
		routes = append(routes, routeJSON{Host: rt.Host, Path: rt.Path})
	}
	s := room.Settings
	return roomJSON{
		ID:     room.ID,
		Name:   room.Name,
		Origin: room.Origin,
		Routes: routes,
		Settings: settingsJSON{
			TotalActiveUsers:        s.TotalActiveUsers,
			NewUsersPerMinute:       s.NewUsersPerMinute,
			SessionDurationSeconds:  s.SessionDuration.Seconds(),
			DisableSessionRenewal:   s.DisableSessionRenewal,
			QueueingMethod:          queueingMethod(s.QueueingMethod),
			QueueAll:                s.QueueAll,
			Suspended:               s.Suspended,
			QueueingStatusCode:      s.QueueingStatusCode,
			JSONResponseEnabled:     s.JSONResponseEnabled,
			CookieSuffix:            s.CookieSuffix,
			CookieAttributes:        cookieAttributesJSON{SameSite: s.CookieAttributes.SameSite, Secure: s.CookieAttributes.Secure},
			CustomPageHTML:          s.CustomPageHTML,
			DefaultTemplateLanguage: s.DefaultTemplateLanguage,
			RefreshIntervalSeconds:  s.RefreshInterval.Seconds(),
		},
	}
}

// queueingMethod names m, with the zero value as fifo.
func queueingMethod(m usher.QueueingMethod) string {
	if m == "" {
		return string(usher.FIFO)
	}
	return string(m)
}
