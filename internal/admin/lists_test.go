package admin

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "write the golden files of the tests that have them")

// TestAPIListsTranscript pins the answers of the events and rules paths
// (status, ETag, Location, body) over a scripted session of good and bad
// requests, in testdata/lists.golden: both lists are served by one
// generic handler, and this is what it must answer.
//
//	go test ./internal/admin -run TestAPIListsTranscript -update
func TestAPIListsTranscript(t *testing.T) {
	a := newAPITest(t, nil, "")
	var out strings.Builder
	var last string // the ETag of the last answer
	step := func(method, path, ifMatch, body string) {
		t.Helper()
		switch ifMatch {
		case "last":
			ifMatch = last
		case "list", "item":
			ifMatch = a.etag(t, strings.TrimSuffix(path, "/"))
		}
		token := writeToken
		if method == "GET" {
			token = readToken
		}
		rec := a.do(t, method, path, token, ifMatch, body)
		last = rec.Header().Get("ETag")
		fmt.Fprintf(&out, "%s %s If-Match=%q %s\n-> %d ETag=%q Location=%q\n%s\n", method, path, ifMatch, body,
			rec.Code, rec.Header().Get("ETag"), rec.Header().Get("Location"), strings.TrimSpace(rec.Body.String()))
	}
	const ev = `{"name": "late drop", "event_start_time": "2026-12-02T10:00:00Z", "event_end_time": "2026-12-02T11:00:00Z", "queue_all": true}`
	for _, s := range [][4]string{
		{"GET", "/api/v1/rooms/sale/events", "", ""},
		{"GET", "/api/v1/rooms/sale/events/drop", "", ""},
		{"GET", "/api/v1/rooms/sale/events/nosuch", "", ""},
		{"GET", "/api/v1/rooms/nosuch/events", "", ""},
		{"GET", "/api/v1/rooms/nosuch/events/drop", "", ""},
		{"POST", "/api/v1/rooms/sale/events", "", ev},
		{"POST", "/api/v1/rooms/sale/events", `"stale"`, ev},
		{"POST", "/api/v1/rooms/nosuch/events", "*", ev},
		{"POST", "/api/v1/rooms/sale/events", "*", `{"name": 3}`},
		{"POST", "/api/v1/rooms/sale/events", "*", `[1]`},
		{"POST", "/api/v1/rooms/sale/events", "*", `{"name": "drop", "event_start_time": "2026-12-03T10:00:00Z", "event_end_time": "2026-12-03T11:00:00Z"}`},
		{"POST", "/api/v1/rooms/sale/events", "*", `{"name": "bad", "event_start_time": "2026-12-03T10:00:00Z", "event_end_time": "2026-12-03T09:00:00Z"}`},
		{"POST", "/api/v1/rooms/sale/events", "list", ev},
		{"GET", "/api/v1/rooms/sale/events/late%20drop", "", ""},
		{"PATCH", "/api/v1/rooms/sale/events/late%20drop", "", `{"queue_all": false}`},
		{"PATCH", "/api/v1/rooms/sale/events/late%20drop", "item", `{"name": "drop"}`},
		{"PATCH", "/api/v1/rooms/sale/events/late%20drop", "item", `{"name": 7}`},
		{"PATCH", "/api/v1/rooms/sale/events/late%20drop", "item", `{"name": "early drop", "event_start_time": "2026-11-30T10:00:00Z", "event_end_time": "2026-11-30T11:00:00Z", "queue_all": null}`},
		{"PATCH", "/api/v1/rooms/sale/events/early%20drop", "last", `{"total_active_users": 0}`},
		{"PATCH", "/api/v1/rooms/sale/events/early%20drop", "*", `{"total_active_users": 50}`},
		{"PATCH", "/api/v1/rooms/sale/events/early%20drop", "*", `{"total_active_users": 50}`},
		{"PATCH", "/api/v1/rooms/sale/events/nosuch", "*", `{"total_active_users": 50}`},
		{"DELETE", "/api/v1/rooms/sale/events/late%20drop", "*", ""},
		{"DELETE", "/api/v1/rooms/sale/events/drop", "", ""},
		{"DELETE", "/api/v1/rooms/sale/events/drop", "item", ""},
		{"GET", "/api/v1/rooms/sale/events", "", ""},

		{"GET", "/api/v1/rooms/sale/rules", "", ""},
		{"GET", "/api/v1/rooms/sale/rules/0", "", ""},
		{"GET", "/api/v1/rooms/sale/rules/1", "", ""},
		{"GET", "/api/v1/rooms/sale/rules/01", "", ""},
		{"GET", "/api/v1/rooms/sale/rules/-1", "", ""},
		{"GET", "/api/v1/rooms/sale/rules/x", "", ""},
		{"GET", "/api/v1/rooms/nosuch/rules", "", ""},
		{"POST", "/api/v1/rooms/sale/rules", "", `{"expression": "path == \"/health\""}`},
		{"POST", "/api/v1/rooms/sale/rules", "*", `{"expression": "path ==="}`},
		{"POST", "/api/v1/rooms/sale/rules", "*", `{"expression": "path == \"/x\"", "colour": "red"}`},
		{"POST", "/api/v1/rooms/sale/rules", "list", `{"description": "health", "expression": "path == \"/health\""}`},
		{"POST", "/api/v1/rooms/sale/rules", "list", `{"expression": "path == \"/feeds\"", "enabled": false}`},
		{"PATCH", "/api/v1/rooms/sale/rules/1", "item", `{"enabled": false, "description": null}`},
		{"PATCH", "/api/v1/rooms/sale/rules/1", "item", `{"enabled": false}`},
		{"PATCH", "/api/v1/rooms/sale/rules/2", `"stale"`, `{"enabled": true}`},
		{"PATCH", "/api/v1/rooms/sale/rules/3", "*", `{"enabled": true}`},
		{"PATCH", "/api/v1/rooms/sale/rules/0", "*", `{"expression": 5}`},
		{"DELETE", "/api/v1/rooms/sale/rules/0", "item", ""},
		{"DELETE", "/api/v1/rooms/sale/rules/5", "*", ""},
		{"GET", "/api/v1/rooms/sale/rules", "", ""},
		{"GET", "/api/v1/rooms/sale", "", ""},
		{"GET", "/api/v1/audit", "", ""},
	} {
		step(s[0], s[1], s[2], s[3])
	}
	path := filepath.Join("testdata", "lists.golden")
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("the answers differ from %s at line %d:\n got: %s\nwant: %s", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("the answers differ from %s in length: %d lines, want %d", path, len(gl), len(wl))
	}
}
