package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/usherhq/usher"
)

// InviteFunc makes an invite for room: uses, expiry and mode (already
// checked), returning the invite's text for its link.
type InviteFunc func(room string, uses int, expires time.Time, mode usher.InviteMode) (text string, err error)

// inviteRequest is the body of POST /v1/rooms/{id}/invites.
type inviteRequest struct {
	// Uses is how many times the link may be used (1 to 1,000,000).
	Uses int `json:"uses"`
	// Expires is when the link stops working: an RFC 3339 time, or a Go
	// duration from now ("2h").
	Expires string `json:"expires"`
	// Mode is "admit" (in at once, counted, even past the limits) or
	// "front" (a place at the front of the line).
	Mode string `json:"mode"`
}

type inviteJSON struct {
	Room    string    `json:"room"`
	Path    string    `json:"path"`
	Uses    int       `json:"uses"`
	Expires time.Time `json:"expires"`
	Mode    string    `json:"mode"`
}

// maxBody bounds a JSON request body.
const maxBody = 64 << 10

// serveNewInvite makes an invite link for a room.
func (h *Handler) serveNewInvite(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if h.room(id) == nil {
		writeError(w, http.StatusNotFound, usher.ENotFound, fmt.Sprintf("no room %q", id))
		return
	}
	if h.invite == nil {
		writeError(w, http.StatusServiceUnavailable, usher.EUnavailable, "invites are not available")
		return
	}
	var req inviteRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, usher.EInvalid, "body: "+strings.TrimPrefix(err.Error(), "json: "))
		return
	}
	now := h.now()
	var problems []string
	if req.Uses < 1 || req.Uses > 1_000_000 {
		problems = append(problems, fmt.Sprintf("uses: must be from 1 to 1000000, got %d", req.Uses))
	}
	exp, msg := parseExpiry(req.Expires, now)
	if msg != "" {
		problems = append(problems, "expires: "+msg)
	}
	mode := usher.InviteMode(0)
	switch req.Mode {
	case "admit":
		mode = usher.InviteAdmit
	case "front":
		mode = usher.InviteFront
	default:
		problems = append(problems, fmt.Sprintf("mode: must be admit or front, got %q", req.Mode))
	}
	if len(problems) > 0 {
		writeError(w, http.StatusUnprocessableEntity, usher.EInvalid, strings.Join(problems, "; "))
		return
	}
	text, err := h.invite(id, req.Uses, exp, mode)
	if err != nil {
		h.logger.Error("invite not made", "room", id, "err", err)
		writeError(w, http.StatusInternalServerError, usher.EInternal, "internal error")
		return
	}
	h.logger.Info("invite made", "room", id, "uses", req.Uses, "expires", exp.UTC(), "mode", req.Mode)
	writeJSON(w, http.StatusCreated, inviteJSON{Room: id, Path: "/__usher/invite/" + text, Uses: req.Uses, Expires: exp.UTC(), Mode: req.Mode})
}

// parseExpiry reads an expiry: an RFC 3339 time after now, or a duration
// from now of up to a year.
func parseExpiry(s string, now time.Time) (time.Time, string) {
	if s == "" {
		return time.Time{}, `required: an RFC 3339 time or a duration like "2h"`
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 || d > 366*24*time.Hour {
			return time.Time{}, fmt.Sprintf("must be a duration from 1s to a year, got %s", s)
		}
		return now.Add(d), ""
	}
	t, err := time.Parse(time.RFC3339, s)
	switch {
	case err != nil:
		return time.Time{}, fmt.Sprintf(`must be an RFC 3339 time or a duration like "2h", got %q`, s)
	case !t.After(now):
		return time.Time{}, fmt.Sprintf("must be in the future, got %s", s)
	case t.After(now.Add(366 * 24 * time.Hour)):
		return time.Time{}, fmt.Sprintf("must be within a year, got %s", s)
	}
	return t, ""
}

// room returns the room with id, or nil.
func (h *Handler) room(id string) *usher.Room {
	for _, r := range h.rooms() {
		if r.ID == id {
			return r
		}
	}
	return nil
}
