package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/config"
)

// Error codes of the write API that have no usher.Error equivalent.
const (
	codePreconditionFailed   = "precondition_failed"
	codePreconditionRequired = "precondition_required"
	codeTooLarge             = "too_large"
)

// writeTimeout bounds the store calls of one change.
const writeTimeout = 10 * time.Second

// apiError is an answer that is not a success.
type apiError struct {
	status   int
	code     string
	message  string
	field    string
	problems []ProblemJSON
}

func (e *apiError) write(w http.ResponseWriter) {
	writeJSON(w, e.status, errorJSON{Error: errorBody{Code: e.code, Message: e.message, Field: e.field, Problems: e.problems}})
}

// invalid is a 400 about a field.
func invalid(field, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: usher.EInvalid, field: field, message: fmt.Sprintf(format, args...)}
}

var unknownField = regexp.MustCompile(`unknown field "([^"]+)"`)

// problemField returns the field a config problem is about, relative to
// its room: "total_active_users", "events[1].event_start_time",
// "cookie_attributes.samesite"; for an unknown field, its name.
func problemField(p config.Problem) string {
	path := p.Path
	if strings.HasPrefix(path, "rooms[") {
		if i := strings.IndexByte(path, ']'); i >= 0 {
			path = strings.TrimPrefix(path[i+1:], ".")
		}
	}
	if m := unknownField.FindStringSubmatch(p.Message); m != nil {
		if path == "" {
			return m[1]
		}
		return path + "." + m[1]
	}
	return path
}

// validationError turns what WithRuntime refused into an answer: 400 for
// a value of the wrong form, 422 for one that does not hold; every
// problem named as the config file names it.
func validationError(err error) *apiError {
	var v *config.ValidationError
	if !errors.As(err, &v) {
		return &apiError{status: http.StatusUnprocessableEntity, code: usher.EInvalid, message: err.Error()}
	}
	e := &apiError{status: http.StatusUnprocessableEntity, code: usher.EInvalid}
	if v.Decoding {
		e.status = http.StatusBadRequest
	}
	msgs := make([]string, 0, len(v.Problems))
	for _, p := range v.Problems {
		e.problems = append(e.problems, ProblemJSON{Field: problemField(p), Message: p.String()})
		msgs = append(msgs, p.String())
	}
	e.message = strings.Join(msgs, "; ")
	if len(e.problems) > 0 {
		e.field = e.problems[0].Field
	}
	if len(e.problems) == 1 {
		e.problems = nil
	}
	return e
}

// storeError is the answer when the store fails.
func (h *Handler) storeError(r *http.Request, err error) *apiError {
	h.logger.LogAttrs(r.Context(), slog.LevelError, "admin API: store", slog.Any("err", err))
	if usher.ErrorCode(err) == usher.EUnavailable {
		return &apiError{status: http.StatusServiceUnavailable, code: usher.EUnavailable, message: "the store cannot be reached; nothing changed: " + usher.ErrorMessage(err)}
	}
	return &apiError{status: http.StatusInternalServerError, code: usher.EInternal, message: "internal error: " + usher.ErrorMessage(err)}
}

// maxWriteBody bounds a write's JSON body.
const maxWriteBody = 64 << 10

// object is a JSON object's fields in order, each as its raw JSON.
type object struct {
	keys   []string
	fields map[string]json.RawMessage
}

// readObject reads r's body as one JSON object, refusing a body that is
// not one, too large, or that sets a field twice.
func readObject(w http.ResponseWriter, r *http.Request) (object, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWriteBody))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return object{}, &apiError{status: http.StatusRequestEntityTooLarge, code: codeTooLarge, message: fmt.Sprintf("body: larger than %d bytes", maxWriteBody)}
		}
		return object{}, invalid("", "body: %v", err)
	}
	return parseObject(body)
}

// parseObject parses one JSON object.
func parseObject(body []byte) (object, *apiError) {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return object{}, invalid("", "body: must be a JSON object: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return object{}, invalid("", "body: must be a JSON object, got %v", tok)
	}
	o := object{fields: make(map[string]json.RawMessage)}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return object{}, invalid("", "body: not valid JSON: %v", err)
		}
		key := kt.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return object{}, invalid(key, "body: %s: not valid JSON: %v", key, strings.TrimPrefix(err.Error(), "json: "))
		}
		if _, dup := o.fields[key]; dup {
			return object{}, invalid(key, "body: field %q is set twice", key)
		}
		o.keys = append(o.keys, key)
		o.fields[key] = raw
	}
	if _, err := dec.Token(); err != nil {
		return object{}, invalid("", "body: not valid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return object{}, invalid("", "body: must be one JSON object, found more after it")
	}
	return o, nil
}

// isNull reports whether raw is JSON null.
func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// compactRaw returns raw without insignificant white space.
func compactRaw(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// AuditEntry is one record of the audit log, as GET /api/v1/audit shows
// it.
type AuditEntry struct {
	// Version is the runtime document's version the change made.
	Version int64 `json:"version"`
	// Time is when the change was made.
	Time time.Time `json:"time"`
	// Token names the admin token that made it.
	Token string `json:"token"`
	// Remote is the address the request came from.
	Remote string `json:"remote,omitempty"`
	// Action is what was done: room.update, room.reset, event.create,
	// event.update, event.delete, rule.create, rule.update, rule.delete,
	// or autopilot.change (a room's autopilot changed its effective
	// limits; Token is "autopilot", and the record leaves the runtime
	// document alone).
	Action string `json:"action"`
	// Room is the room changed.
	Room string `json:"room"`
	// Target is the resource changed: "rooms/sale",
	// "rooms/sale/events/Autumn drop", "rooms/sale/rules/2".
	Target string `json:"target"`
	// Before and After are the values in force before and after: the
	// fields a room change named, or the event or rule (null when created
	// or deleted).
	Before any `json:"before"`
	After  any `json:"after"`
	// Reason is why an autopilot changed the limits (latency,
	// latency_target, errors, recovered), with the figures it saw.
	Reason string `json:"reason,omitempty"`
}

// maxAuditValue bounds the JSON of an entry's before or after: larger
// values are recorded by size and hash only.
const maxAuditValue = 32 << 10

// boundValue returns v, or a note of its size and hash when its JSON is
// larger than maxAuditValue.
func boundValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil || len(b) <= maxAuditValue {
		return v
	}
	return map[string]any{"truncated": true, "bytes": len(b), "etag": etagOf(v)}
}

// change is one write to the runtime document, on one room.
type change struct {
	room   string // the room's id
	what   string // names the resource in messages: `room "sale"`
	action string // for the audit log
	target string
	// inForce, when set, is given the config and runtime document in
	// force before tag and edit are called, and those after the change
	// before after is.
	inForce func(cfg *config.Config, rt *config.Runtime)
	// tag returns the resource's current ETag in rm, the room in force.
	tag func(rm *usher.Room) (string, *apiError)
	// edit changes ov, a copy of the room's overrides, for the room rm in
	// force (ref names it as the config's problems do: "rooms[0] (sale)"),
	// and returns them with the audit log's before.
	edit func(rm *usher.Room, ref string, ov config.RoomOverrides, now time.Time, by string) (config.RoomOverrides, any, *apiError)
	// after returns the audit log's after from the room now in force.
	after func(rm *usher.Room) any
	// answer writes the success from the snapshot now in force.
	answer func(w http.ResponseWriter, snap *Snapshot)
}

// maxAttempts bounds the tries of a change whose version keeps moving.
const maxAttempts = 5

// run makes a change: it reads the store's runtime document, checks
// If-Match against the resource in force over it, edits a copy, builds
// and validates the config that would result exactly as a config file is
// validated, and swaps the document in the store with its audit record,
// from the version it read; a version that moved meanwhile starts it
// again. Nothing changes unless all of that succeeds.
func (h *Handler) run(w http.ResponseWriter, r *http.Request, c change) {
	ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
	defer cancel()
	for range maxAttempts {
		cur := h.layers.Current()
		v, rt, err := h.layers.load(ctx)
		if err != nil {
			h.storeError(r, err).write(w)
			return
		}
		base := cur.Effective
		if v != cur.Version {
			if eff, err := cur.File.WithRuntime(rt); err == nil {
				base = eff
			}
		}
		i := roomIndex(base, c.room)
		if i < 0 {
			noRoom(c.room).write(w)
			return
		}
		rm := &base.Rooms[i]
		if c.inForce != nil {
			c.inForce(base, rt)
		}
		tag, aerr := c.tag(rm)
		if aerr != nil {
			aerr.write(w)
			return
		}
		if status, msg := ifMatch(r, tag, c.what); status != 0 {
			code := codePreconditionFailed
			if status == http.StatusPreconditionRequired {
				code = codePreconditionRequired
			}
			(&apiError{status: status, code: code, message: msg}).write(w)
			return
		}
		now, by := h.now().UTC(), tokenName(r)
		ref := fmt.Sprintf("rooms[%d] (%s)", i, rm.ID)
		ov, before, aerr := c.edit(rm, ref, cloneOverrides(rt.Room(c.room)), now, by)
		if aerr != nil {
			aerr.write(w)
			return
		}
		next := rt.Clone()
		next.SetRoom(c.room, ov)
		if sameDoc(rt, next) {
			c.answer(w, cur)
			return
		}
		eff, err := cur.File.WithRuntime(next)
		if err != nil {
			validationError(err).write(w)
			return
		}
		if c.inForce != nil {
			c.inForce(eff, next)
		}
		entry := AuditEntry{Time: now, Token: by, Remote: r.RemoteAddr, Action: c.action, Room: c.room, Target: c.target,
			Before: boundValue(before), After: boundValue(c.after(&eff.Rooms[i]))}
		record, err := json.Marshal(entry)
		if err != nil {
			h.storeError(r, err).write(w)
			return
		}
		ver, err := h.layers.commit(ctx, v, next, eff, cur.File, record, fmt.Sprintf("runtime change by token %q (%s %s)", by, c.action, c.target))
		switch {
		case usher.ErrorCode(err) == usher.EConflict:
			continue
		case err != nil && ver != 0:
			h.logger.Error("admin API: change stored but not applied here", "version", ver, "err", err)
			(&apiError{status: http.StatusInternalServerError, code: usher.EInternal, message: err.Error()}).write(w)
			return
		case usher.ErrorCode(err) == usher.EInvalid:
			(&apiError{status: http.StatusUnprocessableEntity, code: usher.EInvalid, message: usher.ErrorMessage(err)}).write(w)
			return
		case err != nil:
			h.storeError(r, err).write(w)
			return
		}
		if h.changed != nil {
			entry.Version = ver
			h.changed(entry)
		}
		c.answer(w, h.layers.Current())
		return
	}
	(&apiError{status: http.StatusConflict, code: usher.EConflict,
		message: "the runtime document kept changing while this change was made; try again"}).write(w)
}

// cloneOverrides returns a copy of ov that can be changed.
func cloneOverrides(ov config.RoomOverrides) config.RoomOverrides {
	out := make(config.RoomOverrides, len(ov))
	for k, v := range ov {
		out[k] = v
	}
	return out
}

// sameDoc reports whether two runtime documents are the same.
func sameDoc(a, b *config.Runtime) bool {
	x, err1 := a.Marshal()
	y, err2 := b.Marshal()
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// setOverride sets ov[name] to raw, keeping when and by whom when the
// value is the one already set.
func setOverride(ov config.RoomOverrides, name string, raw json.RawMessage, now time.Time, by string) {
	raw = compactRaw(raw)
	if old, ok := ov[name]; ok && bytes.Equal(compactRaw(old.Value), raw) {
		return
	}
	ov[name] = config.Override{Value: raw, At: now, By: by}
}
