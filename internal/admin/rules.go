package admin

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/config"
)

// rulesTag is the tag of a room's list of rules.
func rulesTag(rm *usher.Room) (string, *apiError) { return etagOf(config.EncodeRules(rm.Rules)), nil }

// ruleTagAt returns the tag of the room's rule at index.
func ruleTagAt(index string) func(rm *usher.Room) (string, *apiError) {
	return func(rm *usher.Room) (string, *apiError) {
		j, aerr := findRule(rm, index)
		if aerr != nil {
			return "", aerr
		}
		return ruleTag(j, config.EncodeRule(&rm.Rules[j])), nil
	}
}

// ruleAnswer writes the rule at *j from the room in force.
func ruleAnswer(id string, j *int, status int) func(w http.ResponseWriter, snap *Snapshot) {
	return func(w http.ResponseWriter, snap *Snapshot) {
		i := roomIndex(snap.Effective, id)
		if i < 0 {
			noRoom(id).write(w)
			return
		}
		rm := &snap.Effective.Rooms[i]
		k, aerr := findRule(rm, strconv.Itoa(*j))
		if aerr != nil {
			aerr.write(w)
			return
		}
		v := rulesView(rm).Rules[k]
		w.Header().Set("ETag", v["etag"].(string))
		if status == http.StatusCreated {
			w.Header().Set("Location", fmt.Sprintf("/api/v1/rooms/%s/rules/%d", id, k))
		}
		writeJSON(w, status, v)
	}
}

// ruleAfter returns the rule at *j in rm, as the file writes it.
func ruleAfter(j *int) func(rm *usher.Room) any {
	return func(rm *usher.Room) any {
		if *j < 0 || *j >= len(rm.Rules) {
			return nil
		}
		return config.EncodeRule(&rm.Rules[*j])
	}
}

// serveCreateRule adds a rule at the end of a room's rules: a JSON object
// of its fields as the config file writes them.
func (h *Handler) serveCreateRule(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, aerr := readObject(w, r)
	if aerr != nil {
		aerr.write(w)
		return
	}
	j := -1
	h.run(w, r, change{
		room: id, what: fmt.Sprintf("the rules of room %q", id), action: "rule.create", target: "rooms/" + id + "/rules",
		tag: rulesTag,
		edit: func(rm *usher.Room, _ string, ov config.RoomOverrides, now time.Time, by string) (config.RoomOverrides, any, *apiError) {
			j = len(rm.Rules)
			ov, aerr := setList(ov, "rules", append(config.EncodeRules(rm.Rules), body.rawFields()), now, by)
			return ov, nil, aerr
		},
		after:  ruleAfter(&j),
		answer: ruleAnswer(id, &j, http.StatusCreated),
	})
}

// servePatchRule changes fields of a rule ({"enabled": false} turns it
// off); null removes its description.
func (h *Handler) servePatchRule(w http.ResponseWriter, r *http.Request) {
	id, index := r.PathValue("id"), r.PathValue("index")
	body, aerr := readObject(w, r)
	if aerr != nil {
		aerr.write(w)
		return
	}
	j := -1
	h.run(w, r, change{
		room: id, what: fmt.Sprintf("rule %s of room %q", index, id), action: "rule.update", target: "rooms/" + id + "/rules/" + index,
		tag: ruleTagAt(index),
		edit: func(rm *usher.Room, _ string, ov config.RoomOverrides, now time.Time, by string) (config.RoomOverrides, any, *apiError) {
			var aerr *apiError
			if j, aerr = findRule(rm, index); aerr != nil {
				return nil, nil, aerr
			}
			list := config.EncodeRules(rm.Rules)
			before := list[j]
			list[j] = body.merge(config.EncodeRule(&rm.Rules[j]))
			ov, aerr = setList(ov, "rules", list, now, by)
			return ov, before, aerr
		},
		after:  ruleAfter(&j),
		answer: ruleAnswer(id, &j, http.StatusOK),
	})
}

// serveDeleteRule removes a rule; the rules after it move up one place.
func (h *Handler) serveDeleteRule(w http.ResponseWriter, r *http.Request) {
	id, index := r.PathValue("id"), r.PathValue("index")
	h.run(w, r, change{
		room: id, what: fmt.Sprintf("rule %s of room %q", index, id), action: "rule.delete", target: "rooms/" + id + "/rules/" + index,
		tag: ruleTagAt(index),
		edit: func(rm *usher.Room, _ string, ov config.RoomOverrides, now time.Time, by string) (config.RoomOverrides, any, *apiError) {
			j, aerr := findRule(rm, index)
			if aerr != nil {
				return nil, nil, aerr
			}
			list := config.EncodeRules(rm.Rules)
			before := list[j]
			ov, aerr = setList(ov, "rules", append(list[:j:j], list[j+1:]...), now, by)
			return ov, before, aerr
		},
		after:  func(*usher.Room) any { return nil },
		answer: func(w http.ResponseWriter, _ *Snapshot) { w.WriteHeader(http.StatusNoContent) },
	})
}
