package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/usherhq/usher/internal/analytics"
)

// Client talks to a running usher's admin API (the CLI's verbs use it).
type Client struct {
	// BaseURL is the admin listener's URL: http://127.0.0.1:9090.
	BaseURL string
	// Token is the bearer token sent with every request.
	Token string
	// HTTP sends the requests (nil: a client with a 10 s timeout).
	HTTP *http.Client
}

// NewClient returns a client of the admin listener at addr (host:port or
// a URL) with token.
func NewClient(addr, token string) *Client {
	if !strings.HasPrefix(addr, "http://") && !strings.HasPrefix(addr, "https://") {
		addr = "http://" + addr
	}
	return &Client{BaseURL: strings.TrimSuffix(addr, "/"), Token: token, HTTP: &http.Client{Timeout: 10 * time.Second}}
}

// APIError is an answer of the API that is not a success.
type APIError struct {
	// Status is the HTTP status.
	Status int
	// Code, Message, Field and Problems are the error's body.
	Code     string
	Message  string
	Field    string
	Problems []ProblemJSON
}

// Error returns the API's message and status.
func (e *APIError) Error() string {
	return fmt.Sprintf("%s (%d %s)", e.Message, e.Status, strings.ToLower(http.StatusText(e.Status)))
}

// do sends a request with an optional JSON body and If-Match, and decodes
// a JSON answer into out (when not nil).
func (c *Client) do(ctx context.Context, method, path, ifMatch string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("admin API at %s: %w", c.BaseURL, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("admin API at %s: %w", c.BaseURL, err)
	}
	if resp.StatusCode >= 300 {
		var e errorJSON
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			return &APIError{Status: resp.StatusCode, Code: e.Error.Code, Message: e.Error.Message, Field: e.Error.Field, Problems: e.Error.Problems}
		}
		return &APIError{Status: resp.StatusCode, Code: "http", Message: fmt.Sprintf("%s %s answered %s", method, path, resp.Status)}
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("admin API: %s %s: unexpected answer: %w", method, path, err)
	}
	return nil
}

func roomPath(id string) string { return "/api/v1/rooms/" + url.PathEscape(id) }

// Status returns every room's status.
func (c *Client) Status(ctx context.Context) (StatusView, error) {
	var v StatusView
	return v, c.do(ctx, http.MethodGet, "/api/v1/status", "", nil, &v)
}

// Rooms returns every room.
func (c *Client) Rooms(ctx context.Context) (RoomsView, error) {
	var v RoomsView
	return v, c.do(ctx, http.MethodGet, "/api/v1/rooms", "", nil, &v)
}

// Room returns a room.
func (c *Client) Room(ctx context.Context, id string) (RoomView, error) {
	var v RoomView
	return v, c.do(ctx, http.MethodGet, roomPath(id), "", nil, &v)
}

// PatchRoom sets fields of a room at runtime (a nil value drops the
// field's override); etag is the room's ETag.
func (c *Client) PatchRoom(ctx context.Context, id, etag string, fields map[string]any) (RoomView, error) {
	var v RoomView
	return v, c.do(ctx, http.MethodPatch, roomPath(id), etag, fields, &v)
}

// ResetRoom drops every runtime override of a room.
func (c *Client) ResetRoom(ctx context.Context, id, etag string) (RoomView, error) {
	var v RoomView
	return v, c.do(ctx, http.MethodDelete, roomPath(id)+"/overrides", etag, nil, &v)
}

// Events returns a room's events.
func (c *Client) Events(ctx context.Context, room string) (EventsView, error) {
	var v EventsView
	return v, c.do(ctx, http.MethodGet, roomPath(room)+"/events", "", nil, &v)
}

// CreateEvent adds an event; etag is the ETag of the room's events.
func (c *Client) CreateEvent(ctx context.Context, room, etag string, fields map[string]any) (map[string]any, error) {
	var v map[string]any
	return v, c.do(ctx, http.MethodPost, roomPath(room)+"/events", etag, fields, &v)
}

// Event returns a room's event.
func (c *Client) Event(ctx context.Context, room, name string) (map[string]any, error) {
	var v map[string]any
	return v, c.do(ctx, http.MethodGet, roomPath(room)+"/events/"+url.PathEscape(name), "", nil, &v)
}

// PatchEvent changes fields of an event (nil removes one); etag is the
// event's.
func (c *Client) PatchEvent(ctx context.Context, room, name, etag string, fields map[string]any) (map[string]any, error) {
	var v map[string]any
	return v, c.do(ctx, http.MethodPatch, roomPath(room)+"/events/"+url.PathEscape(name), etag, fields, &v)
}

// DeleteEvent removes an event; etag is the event's.
func (c *Client) DeleteEvent(ctx context.Context, room, name, etag string) error {
	return c.do(ctx, http.MethodDelete, roomPath(room)+"/events/"+url.PathEscape(name), etag, nil, nil)
}

// Rules returns a room's rules.
func (c *Client) Rules(ctx context.Context, room string) (RulesView, error) {
	var v RulesView
	return v, c.do(ctx, http.MethodGet, roomPath(room)+"/rules", "", nil, &v)
}

// Rule returns a room's rule.
func (c *Client) Rule(ctx context.Context, room string, index int) (map[string]any, error) {
	var v map[string]any
	return v, c.do(ctx, http.MethodGet, roomPath(room)+"/rules/"+strconv.Itoa(index), "", nil, &v)
}

// CreateRule adds a rule at the end; etag is the ETag of the room's rules.
func (c *Client) CreateRule(ctx context.Context, room, etag string, fields map[string]any) (map[string]any, error) {
	var v map[string]any
	return v, c.do(ctx, http.MethodPost, roomPath(room)+"/rules", etag, fields, &v)
}

// PatchRule changes fields of a rule; etag is the rule's.
func (c *Client) PatchRule(ctx context.Context, room string, index int, etag string, fields map[string]any) (map[string]any, error) {
	var v map[string]any
	return v, c.do(ctx, http.MethodPatch, roomPath(room)+"/rules/"+strconv.Itoa(index), etag, fields, &v)
}

// DeleteRule removes a rule; etag is the rule's.
func (c *Client) DeleteRule(ctx context.Context, room string, index int, etag string) error {
	return c.do(ctx, http.MethodDelete, roomPath(room)+"/rules/"+strconv.Itoa(index), etag, nil, nil)
}

// Overrides returns every room's runtime overrides.
func (c *Client) Overrides(ctx context.Context) (OverridesView, error) {
	var v OverridesView
	return v, c.do(ctx, http.MethodGet, "/api/v1/overrides", "", nil, &v)
}

// Audit reads the audit log, newest first: one room's entries (room not
// empty), at most limit (0: the API's default), before a version (0: from
// the newest).
func (c *Client) Audit(ctx context.Context, room string, limit int, before int64) (AuditView, error) {
	q := url.Values{}
	if room != "" {
		q.Set("room", room)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	path := "/api/v1/audit"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var v AuditView
	return v, c.do(ctx, http.MethodGet, path, "", nil, &v)
}

// Analytics reads room's analytics of step ("minute" or "hour") over
// [from, to) (see GET /api/v1/rooms/{id}/analytics).
func (c *Client) Analytics(ctx context.Context, room string, from, to time.Time, step string) (analytics.Report, error) {
	q := url.Values{"from": {from.UTC().Format(time.RFC3339)}, "to": {to.UTC().Format(time.RFC3339)}, "step": {step}}
	var v analytics.Report
	return v, c.do(ctx, http.MethodGet, roomPath(room)+"/analytics?"+q.Encode(), "", nil, &v)
}

// NewInvite asks for an invite link's path (see POST
// /api/v1/rooms/{id}/invites).
func (c *Client) NewInvite(ctx context.Context, room string, uses int, expires, mode string) (InviteView, error) {
	var v InviteView
	body := map[string]any{"uses": uses, "expires": expires, "mode": mode}
	return v, c.do(ctx, http.MethodPost, roomPath(room)+"/invites", "", body, &v)
}

// InviteView is the answer of POST /api/v1/rooms/{id}/invites.
type InviteView = inviteJSON
