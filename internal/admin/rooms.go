package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/autopilot"
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
	// Autopilot is the room's governor, when it has one; the limits
	// above are then the effective ones.
	Autopilot *autopilotJSON `json:"autopilot,omitempty"`
}

// autopilotJSON is a governed room's autopilot in the status.
type autopilotJSON struct {
	// Enabled is false while the settings in force (an event's) turn it
	// off: the configured limits then apply.
	Enabled bool `json:"enabled"`
	// ConfiguredTotalActiveUsers and ConfiguredNewUsersPerMinute are the
	// limits of the settings in force, before the governor.
	ConfiguredTotalActiveUsers  int     `json:"configured_total_active_users"`
	ConfiguredNewUsersPerMinute int     `json:"configured_new_users_per_minute"`
	MinNewUsersPerMinute        int     `json:"min_new_users_per_minute"`
	MaxNewUsersPerMinute        int     `json:"max_new_users_per_minute"`
	MinTotalActiveUsers         int     `json:"min_total_active_users,omitempty"`
	MaxTotalActiveUsers         int     `json:"max_total_active_users,omitempty"`
	Learning                    bool    `json:"learning"`
	BaselineSeconds             float64 `json:"baseline_seconds"`
	ThresholdSeconds            float64 `json:"threshold_seconds"`
	Degraded                    bool    `json:"degraded"`
	LatencySeconds              float64 `json:"latency_seconds"`
	ErrorRate                   float64 `json:"error_rate"`
	Changes                     int64   `json:"changes"`
	// Last is the latest change, with its reason.
	Last *autopilotChangeJSON `json:"last_change,omitempty"`
}

type autopilotChangeJSON struct {
	At               time.Time `json:"at"`
	Direction        string    `json:"direction"`
	Reason           string    `json:"reason"`
	FromRate         int       `json:"from_new_users_per_minute"`
	ToRate           int       `json:"to_new_users_per_minute"`
	FromConcurrency  int       `json:"from_total_active_users,omitempty"`
	ToConcurrency    int       `json:"to_total_active_users,omitempty"`
	LatencySeconds   float64   `json:"latency_seconds"`
	ThresholdSeconds float64   `json:"threshold_seconds,omitempty"`
	ErrorRate        float64   `json:"error_rate"`
}

// autopilotOf returns room's autopilot status under the settings in force
// (nil: not governed).
func (h *Handler) autopilotOf(room string, configured *usher.Settings) *autopilotJSON {
	if h.pilot == nil {
		return nil
	}
	st, ok := h.pilot(room)
	if !ok {
		return nil
	}
	rr, cr := autopilot.Bounds(configured)
	out := &autopilotJSON{
		Enabled:                     configured.Autopilot.Enabled,
		ConfiguredTotalActiveUsers:  configured.TotalActiveUsers,
		ConfiguredNewUsersPerMinute: configured.NewUsersPerMinute,
		MinNewUsersPerMinute:        rr.Min,
		MaxNewUsersPerMinute:        rr.Max,
		Learning:                    st.Learning,
		BaselineSeconds:             st.Baseline.Seconds(),
		ThresholdSeconds:            st.Threshold.Seconds(),
		Degraded:                    st.Degraded,
		LatencySeconds:              st.Latency.Seconds(),
		ErrorRate:                   st.ErrorRate,
		Changes:                     st.Changes,
	}
	if configured.Autopilot.Concurrency {
		out.MinTotalActiveUsers, out.MaxTotalActiveUsers = cr.Min, cr.Max
	}
	if c := st.Last; st.Changes > 0 {
		out.Last = &autopilotChangeJSON{At: c.At.UTC(), Direction: c.Direction, Reason: c.Reason,
			FromRate: c.FromRate, ToRate: c.ToRate, LatencySeconds: c.Latency.Seconds(),
			ThresholdSeconds: c.Threshold.Seconds(), ErrorRate: c.ErrorRate}
		if configured.Autopilot.Concurrency {
			out.Last.FromConcurrency, out.Last.ToConcurrency = c.FromConc, c.ToConc
		}
	}
	return out
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
	// The settings in force now: a running event's over the room's, with
	// the autopilot's effective limits.
	set := room.At(now).Settings
	configured := set
	ap := h.autopilotOf(room.ID, &configured)
	if ap != nil && ap.Enabled {
		st, _ := h.pilot(room.ID)
		rr, cr := autopilot.Bounds(&configured)
		set.NewUsersPerMinute = rr.Clamp(st.Rate)
		if st.Concurrency > 0 && configured.Autopilot.Concurrency {
			set.TotalActiveUsers = cr.Clamp(st.Concurrency)
		}
	}
	return statusJSON{
		Autopilot:              ap,
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
