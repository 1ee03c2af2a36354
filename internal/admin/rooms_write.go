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
)

// roomState is the config and runtime document in force for a change of
// a room's settings (change.inForce sets it).
type roomState struct {
	cfg *config.Config
	rt  *config.Runtime
}

func (s *roomState) set(cfg *config.Config, rt *config.Runtime) { s.cfg, s.rt = cfg, rt }

// encode returns a room in force as the file writes it, webhooks included
// without their secrets.
func (s *roomState) encode(rm *usher.Room) map[string]any { return encodeRoom(s.cfg, rm) }

// tag is the tag of a room's settings (not its events or rules).
func (s *roomState) tag(rm *usher.Room) (string, *apiError) {
	return settingsTag(settingsOf(s.encode(rm)), s.rt, rm.ID), nil
}

// answerRoom writes the room's view from the snapshot in force.
func answerRoom(id string) func(w http.ResponseWriter, snap *Snapshot) {
	return func(w http.ResponseWriter, snap *Snapshot) {
		v, ok := roomView(snap, id)
		if !ok {
			noRoom(id).write(w)
			return
		}
		w.Header().Set("ETag", v.ETag)
		writeJSON(w, http.StatusOK, v)
	}
}

// servePatchRoom sets room fields at runtime: a JSON object of fields as
// the config file writes them; null drops a field's override (back to the
// file's value). cookie_attributes overrides key by key.
func (h *Handler) servePatchRoom(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, aerr := readObject(w, r)
	if aerr != nil {
		aerr.write(w)
		return
	}
	if len(body.keys) == 0 {
		invalid("", "body: name at least one field to change, like {\"queue_all\": true}").write(w)
		return
	}
	var st roomState
	h.run(w, r, change{
		room: id, what: fmt.Sprintf("room %q", id), action: "room.update", target: "rooms/" + id,
		inForce: st.set, tag: st.tag,
		edit: func(rm *usher.Room, ref string, ov config.RoomOverrides, now time.Time, by string) (config.RoomOverrides, any, *apiError) {
			enc := st.encode(rm)
			before := make(map[string]any)
			var errs []*apiError
			for _, key := range body.keys {
				raw := body.fields[key]
				if aerr := patchable(ref, id, key); aerr != nil && !valueProblem(key, raw) {
					errs = append(errs, aerr)
					continue
				}
				if key == "webhooks" && !isNull(raw) {
					var aerr *apiError
					if raw, aerr = keepSecrets(ref, raw, st.cfg.RoomWebhooks(id)); aerr != nil {
						errs = append(errs, aerr)
						continue
					}
				}
				before[key] = enc[key]
				parts, aerr := splitField(ref, key, raw)
				if aerr != nil {
					errs = append(errs, aerr)
					continue
				}
				for _, name := range slices.Sorted(maps.Keys(parts)) {
					if v := parts[name]; isNull(v) {
						delete(ov, name)
					} else {
						setOverride(ov, name, v, now, by)
					}
				}
			}
			if len(errs) > 0 {
				return nil, nil, joinErrors(errs)
			}
			return ov, before, nil
		},
		after: func(rm *usher.Room) any {
			enc := st.encode(rm)
			after := make(map[string]any)
			for _, key := range body.keys {
				after[key] = enc[key]
			}
			return after
		},
		answer: answerRoom(id),
	})
}

// valueProblem reports whether a field patchable refuses is better left
// to WithRuntime, which reports it with every other problem of the
// request: an unknown field or the id, set to a value (null for them
// would change nothing, and is refused here).
func valueProblem(key string, raw json.RawMessage) bool {
	if isNull(raw) || key == "events" || key == "rules" || strings.Contains(key, ".") {
		return false
	}
	ok, _ := config.OverridableField(key)
	return !ok
}

// joinErrors returns one answer for the problems of several fields of a
// request: 400, every problem listed.
func joinErrors(errs []*apiError) *apiError {
	if len(errs) == 1 {
		return errs[0]
	}
	e := &apiError{status: http.StatusBadRequest, code: usher.EInvalid, field: errs[0].field}
	msgs := make([]string, 0, len(errs))
	for _, x := range errs {
		e.problems = append(e.problems, ProblemJSON{Field: x.field, Message: x.message})
		msgs = append(msgs, x.message)
	}
	e.message = strings.Join(msgs, "; ")
	return e
}

// patchable checks that a PATCH of a room may name key.
func patchable(ref, id, key string) *apiError {
	switch key {
	case "events", "rules":
		return invalid(key, "%s: %s: change a room's %s one by one at /api/v1/rooms/%s/%s", ref, key, key, id, key)
	}
	if strings.Contains(key, ".") {
		return invalid(key, "%s: unknown field %q (write a block as an object: {\"cookie_attributes\": {\"samesite\": \"strict\"}})", ref, key)
	}
	if ok, why := config.OverridableField(key); !ok {
		if strings.HasPrefix(why, "unknown field") {
			return invalid(key, "%s: %s", ref, why)
		}
		return invalid(key, "%s: %s: %s", ref, key, why)
	}
	return nil
}

// keepSecrets returns a PATCH's webhooks list with what GET does not show
// filled in from the webhooks in force, so that a list read, edited and
// sent back keeps them:
//
//   - a webhook whose url is as GET shows it (scheme and host, "/…" for a
//     path: config.WebhookTarget) and whose name is that of a webhook in
//     force gets that one's full URL;
//   - a webhook that does not send its secret (or sends null or "(set)",
//     as GET shows it) but has the name and URL of one in force gets that
//     one's secret.
//
// Such a webhook is written again with its fields sorted. secret_file is
// refused: a path on each node means nothing here. Values of the wrong
// form are left for the config's checks to name.
func keepSecrets(ref string, raw json.RawMessage, prev []config.Webhook) (json.RawMessage, *apiError) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil || list == nil {
		return raw, nil
	}
	for j, el := range list {
		o, aerr := parseObject(el)
		if aerr != nil {
			continue
		}
		at := fmt.Sprintf("webhooks[%d]", j)
		if _, ok := o.fields["secret_file"]; ok {
			return nil, invalid(at+".secret_file", "%s: %s.secret_file: cannot be set through the API (a path on each node): send the secret itself in secret, or set secret_file in the config file", ref, at)
		}
		var secret, name, url string
		_ = json.Unmarshal(o.fields["name"], &name)
		_ = json.Unmarshal(o.fields["url"], &url)
		changed := false
		if k := slices.IndexFunc(prev, func(w config.Webhook) bool { return w.Name == name }); k >= 0 &&
			url != prev[k].URL && url == config.WebhookTarget(prev[k].URL) {
			url = prev[k].URL
			o.fields["url"], _ = json.Marshal(url)
			changed = true
		}
		if s, ok := o.fields["secret"]; !ok || isNull(s) || (json.Unmarshal(s, &secret) == nil && secret == config.SecretShown) {
			delete(o.fields, "secret")
			for _, w := range prev {
				if w.Name == name && w.URL == url && w.SecretValue() != "" {
					o.fields["secret"], _ = json.Marshal(w.SecretValue())
					break
				}
			}
			changed = true
		}
		if !changed {
			continue
		}
		b, err := json.Marshal(o.fields)
		if err != nil {
			return nil, invalid(at, "%s: %s: %v", ref, at, err)
		}
		list[j] = b
	}
	out, err := json.Marshal(list)
	if err != nil {
		return nil, invalid("webhooks", "%s: webhooks: %v", ref, err)
	}
	return out, nil
}

// splitField returns the overrides a PATCH field sets: itself, or for
// cookie_attributes each key it names (null: both).
func splitField(ref, key string, raw json.RawMessage) (map[string]json.RawMessage, *apiError) {
	if key != "cookie_attributes" {
		return map[string]json.RawMessage{key: raw}, nil
	}
	if isNull(raw) {
		return map[string]json.RawMessage{"cookie_attributes.samesite": raw, "cookie_attributes.secure": raw}, nil
	}
	o, aerr := parseObject(raw)
	if aerr != nil {
		return nil, invalid(key, "%s: cookie_attributes: must be a mapping like {\"samesite\": \"strict\"}, got %s", ref, compactRaw(raw))
	}
	out := make(map[string]json.RawMessage)
	for _, k := range o.keys {
		if k != "samesite" && k != "secure" {
			return nil, invalid(key+"."+k, "%s: cookie_attributes: unknown field %q", ref, k)
		}
		out[key+"."+k] = o.fields[k]
	}
	return out, nil
}

// serveResetRoom drops every runtime override of a room: its settings,
// events and rules follow the config file again.
func (h *Handler) serveResetRoom(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var dropped []string
	var st roomState
	h.run(w, r, change{
		room: id, what: fmt.Sprintf("room %q", id), action: "room.reset", target: "rooms/" + id,
		inForce: st.set, tag: st.tag,
		edit: func(rm *usher.Room, _ string, ov config.RoomOverrides, _ time.Time, _ string) (config.RoomOverrides, any, *apiError) {
			enc := st.encode(rm)
			dropped = slices.Sorted(maps.Keys(ov))
			before := make(map[string]any)
			for _, name := range dropped {
				before[name] = fieldValue(enc, name)
			}
			return nil, before, nil
		},
		after: func(rm *usher.Room) any {
			enc := st.encode(rm)
			after := make(map[string]any)
			for _, name := range dropped {
				after[name] = fieldValue(enc, name)
			}
			return after
		},
		answer: answerRoom(id),
	})
}
