package admin

import (
	"fmt"
	"net/http"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/config"
)

// rulesList is a room's rules, named by their place
// (/api/v1/rooms/{id}/rules/{index}, from 0), in order.
var rulesList = &listKind[usher.Rule]{
	field: "rules", noun: "rule", param: "index", byIndex: true,
	items:  func(rm *usher.Room) []usher.Rule { return rm.Rules },
	encode: config.EncodeRule,
	tag:    func(j int, enc map[string]any) string { return ruleTag(j, enc) },
	find:   findRule,
	label:  func(index string) string { return "rule " + index },
	view:   func(etag string, items []map[string]any) any { return RulesView{ETag: etag, Rules: items} },
}

// ruleTag is the tag of a room's i-th rule: its place and its fields.
func ruleTag(i int, rule any) string { return etagOf([]any{i, rule}) }

// rulesView returns a room's rules with their index and tags.
func rulesView(rm *usher.Room) RulesView {
	etag, items := rulesList.views(rm)
	return RulesView{ETag: etag, Rules: items}
}

// findRule returns the index of the room's rule at index (as written in
// the path): 404 when there is none.
func findRule(rm *usher.Room, index string) (int, *apiError) {
	var j int
	if _, err := fmt.Sscanf(index, "%d", &j); err != nil || fmt.Sprint(j) != index || j < 0 || j >= len(rm.Rules) {
		return -1, &apiError{status: http.StatusNotFound, code: usher.ENotFound,
			message: fmt.Sprintf("room %q has no rule %q (rules are numbered from 0; it has %d)", rm.ID, index, len(rm.Rules))}
	}
	return j, nil
}
