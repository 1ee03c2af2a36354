package admin

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/analytics"
)

// analyticsTimeout bounds one analytics read.
const analyticsTimeout = 5 * time.Second

// serveAnalytics answers GET /api/v1/rooms/{id}/analytics?from=&to=&step=
// with the room's analytics report (see analytics.Report). from and to
// are RFC 3339 times (to defaults to now, from to one hour before to for
// minute steps, a day for hour steps); step is minute (the default) or
// hour. A minute range spans at most AnalyticsMinuteKeep (the minutes
// kept), an hour range at most AnalyticsHourKeep.
func (h *Handler) serveAnalytics(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	room := h.findRoom(id)
	if room == nil {
		writeError(w, http.StatusNotFound, usher.ENotFound, fmt.Sprintf("no room %q", id))
		return
	}
	if h.analytics == nil {
		writeError(w, http.StatusServiceUnavailable, usher.EUnavailable, "analytics are not kept by this node")
		return
	}
	bad := func(field, msg string) {
		writeJSON(w, http.StatusBadRequest, errorJSON{Error: errorBody{Code: usher.EInvalid, Field: field, Message: field + ": " + msg}})
	}
	q := r.URL.Query()
	step := time.Minute
	if s := q.Get("step"); s != "" {
		var ok bool
		if step, ok = analytics.ParseStep(s); !ok {
			bad("step", fmt.Sprintf("%.40q is neither minute nor hour", s))
			return
		}
	}
	keep, span := usher.AnalyticsMinuteKeep, time.Hour
	if step == time.Hour {
		keep, span = usher.AnalyticsHourKeep, 24*time.Hour
	}
	to := h.now().UTC()
	if s := q.Get("to"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			bad("to", fmt.Sprintf("%.40q is not an RFC 3339 time (2026-11-23T14:00:00Z)", s))
			return
		}
		to = t.UTC()
	}
	from := to.Add(-span)
	if s := q.Get("from"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			bad("from", fmt.Sprintf("%.40q is not an RFC 3339 time (2026-11-23T14:00:00Z)", s))
			return
		}
		from = t.UTC()
	}
	switch {
	case !from.Before(to):
		bad("from", "must be before to")
		return
	case to.Sub(from) > keep+step:
		bad("from", fmt.Sprintf("a range of %s steps spans at most %v (what is kept); use a later from or step=hour", analytics.StepName(step), keep))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), analyticsTimeout)
	defer cancel()
	rep, err := analytics.Query(ctx, h.analytics, room.ID, step, from, to)
	if err != nil {
		h.logger.Error("analytics read failed", "room", room.ID, "err", err)
		writeError(w, http.StatusServiceUnavailable, usher.EUnavailable, fmt.Sprintf("analytics of room %q could not be read", room.ID))
		return
	}
	writeJSON(w, http.StatusOK, rep)
}
