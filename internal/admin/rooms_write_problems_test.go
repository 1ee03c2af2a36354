package admin

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestAPIPatchEveryProblem: a PATCH of a room with several bad fields is
// told of every one in one answer, whatever their kind (a value of the
// wrong type, one out of range, an unknown field), and changes nothing.
func TestAPIPatchEveryProblem(t *testing.T) {
	const room = "/api/v1/rooms/sale"
	cases := []struct {
		name   string
		body   string
		status int
		want   []string // the fields of the problems, in order
	}{
		{"type and range", `{"total_active_users": -5, "session_duration": "soon"}`, 400,
			[]string{"session_duration", "total_active_users"}},
		{"two ranges", `{"total_active_users": 0, "new_users_per_minute": -1, "queueing_method": "lifo"}`, 422,
			[]string{"total_active_users", "new_users_per_minute", "queueing_method"}},
		{"unknown and range", `{"totl_active_users": 5, "queueing_method": "lifo"}`, 400,
			[]string{"totl_active_users", "queueing_method"}},
		{"two unknown", `{"events": [], "cookie_attributes": {"domain": "x"}}`, 400,
			[]string{"events", "cookie_attributes.domain"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newAPITest(t, nil, "")
			rec := a.do(t, "PATCH", room, writeToken, a.etag(t, room), tc.body)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tc.status, rec.Body)
			}
			e := apiErr(t, rec)
			var fields []string
			for _, p := range e.Problems {
				fields = append(fields, p.Field)
				if !strings.Contains(e.Message, p.Message) {
					t.Errorf("message %q leaves out %q", e.Message, p.Message)
				}
			}
			if !slices.Equal(fields, tc.want) {
				t.Errorf("problems %+v, want fields %q", e.Problems, tc.want)
			}
			if v := a.version(t); v != 0 || a.appliedCount() != 0 {
				t.Errorf("a refused request changed something: version %d, %d applied", v, a.appliedCount())
			}
			if rec.Code == http.StatusOK {
				t.Fatal("accepted")
			}
		})
	}
}
