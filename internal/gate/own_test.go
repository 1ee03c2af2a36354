package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

func TestOwnPaths(t *testing.T) {
	o := newOrigin(t)
	room := testRoom("sale", "/", o.URL) // a room over every path
	room.Name = "Spring Sale"
	room.QueueingMethod = usher.Random
	dec := &fakeDecider{StatusFn: func(_ context.Context, r *usher.Room, now time.Time) (usher.RoomStats, error) {
		if r != room || !now.Equal(testNow) {
			t.Errorf("Status(%v, %v)", r.ID, now)
		}
		return usher.RoomStats{Active: 90, Waiting: 1200, AdmittedLastMinute: 48, Slots: 2}, nil
	}}
	g, _ := newGate(t, Options{Rooms: []*usher.Room{room}, DefaultOrigin: o.URL, Decider: dec})

	tests := []struct {
		target string
		status int
		ctype  string
	}{
		{"/__usher/status/sale", 200, "application/json"},
		{"/__usher/status/nope", 404, "application/json"},
		{"/__usher/status/", 404, "application/json"},
		{"/__usher/assets/usher.svg", 200, "image/svg+xml"},
		{"/__usher/assets/%2e%2e/secret", 400, "application/json"},
		{"/__usher/assets/../status/sale", 400, "application/json"},
		{"/__usher//status/sale", 400, "application/json"},
		{"/__usher/status/sale;x", 400, "application/json"},
		{"/__usher/status/%73ale", 400, "application/json"},
		{"/__usher/STATUS/sale", 404, "application/json"},
		{"/sale#/../__usher/status/sale", 400, "application/json"},
		{"/__usher/status/sale#x", 400, "application/json"},
		{"/__usher/assets/", 404, ""},
		{"/__usher/nothing", 404, "application/json"},
		{"/__usher", 404, "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			r := httptest.NewRequest("GET", tt.target, nil)
			r.Header.Set("Accept", "application/json")
			w := serve(g, r)
			if w.Code != tt.status {
				t.Errorf("status %d, want %d: %s", w.Code, tt.status, w.Body.String())
			}
			if ct := w.Header().Get("Content-Type"); tt.ctype != "" && ct != tt.ctype {
				t.Errorf("Content-Type %q, want %q", ct, tt.ctype)
			}
		})
	}
	if n := len(o.requests()); n != 0 {
		t.Errorf("usher's own paths reached the origin %d times", n)
	}
	if n := len(dec.calls()); n != 0 {
		t.Errorf("usher's own paths called Decide %d times", n)
	}

	w := serve(g, httptest.NewRequest("GET", "/__usher/status/sale", nil))
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, w.Body.Bytes(), "", "  "); err != nil {
		t.Fatal(err)
	}
	golden(t, "status.json", pretty.Bytes())
	if w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("status Cache-Control = %q", w.Header().Get("Cache-Control"))
	}
}

// TestOwnPathLookalikes: a path that is not literally under /__usher/ but
// decodes, folds or cleans to it is not answered as usher's own: it is
// decided as the page of the room it could be read as. Before, the gate
// answered these from its own paths (and forward auth let them through
// unasked), while a proxy or an origin could read them as a page of the
// room (issue 21, attack 1).
func TestOwnPathLookalikes(t *testing.T) {
	o := newOrigin(t)
	room := testRoom("sale", "/", o.URL)
	dec := &fakeDecider{}
	g, _ := newGate(t, Options{Rooms: []*usher.Room{room}, DefaultOrigin: o.URL, Decider: dec})
	for i, target := range []string{"/x/../__usher/status/sale", "/__USHER/status/sale", "/__usher%2fstatus%2fsale",
		"/%5f%5fusher/status/sale", "//__usher/status/sale", "/__usher;x/status/sale", "/__Usher/assets/usher.svg",
		"/x/..%2f__usher/status/sale", "/x%5c..%5c__usher/status/sale", "/__usher"} {
		r := httptest.NewRequest("GET", "/", nil)
		r.URL.Path, r.URL.RawPath, r.RequestURI = "", "", target
		u, err := url.ParseRequestURI(target)
		if err != nil {
			t.Fatal(err)
		}
		r.URL = u
		w := serve(g, r)
		if target == "/__usher" {
			// literally usher's: answered (404), never decided
			if w.Code != 404 || len(dec.calls()) != i {
				t.Errorf("%s: %d after %d decisions", target, w.Code, len(dec.calls()))
			}
			continue
		}
		if n := len(dec.calls()); n != i+1 {
			t.Errorf("%s: answered without a decision (%d decisions, want %d): %d %s", target, n, i+1, w.Code, w.Body.String())
		}
		if strings.Contains(w.Body.String(), `"total_active_users"`) {
			t.Errorf("%s: answered with the room's status", target)
		}
	}
}

func TestStatusErrors(t *testing.T) {
	dec := &fakeDecider{StatusFn: func(context.Context, *usher.Room, time.Time) (usher.RoomStats, error) {
		return usher.RoomStats{}, errors.New("store down")
	}}
	g, _ := newGate(t, Options{Rooms: []*usher.Room{testRoom("sale", "/sale", "http://origin.invalid")}, Decider: dec})
	if w := serve(g, httptest.NewRequest("GET", "/__usher/status/sale", nil)); w.Code != 503 {
		t.Errorf("store down: %d", w.Code)
	}
	if w := serve(g, httptest.NewRequest("POST", "/__usher/status/sale", nil)); w.Code != 405 {
		t.Errorf("POST: %d", w.Code)
	}
}
