package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/store/local"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLayersPropagate: a change made through one node's API reaches
// another node on the same store when it polls, and its log says what
// changed.
func TestLayersPropagate(t *testing.T) {
	store, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	a := newAPITest(t, store, "")
	var logs syncBuffer
	b := NewLayers(store, slog.New(slog.NewTextHandler(&logs, nil)))
	b.Start(context.Background(), mustParseConfig(t, apiConfig))
	applied := make(chan *config.Config, 10)
	b.SetApply(func(c *config.Config) error { applied <- c; return nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.Poll(ctx, 10*time.Millisecond)

	if rec := a.do(t, "PATCH", "/api/v1/rooms/sale", writeToken, "*", `{"queue_all": true}`); rec.Code != 200 {
		t.Fatalf("PATCH: %d %s", rec.Code, rec.Body)
	}
	select {
	case c := <-applied:
		if !c.Rooms[0].QueueAll {
			t.Errorf("node b applied queue_all %v", c.Rooms[0].QueueAll)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("node b did not apply the change")
	}
	// apply runs before the node puts the snapshot in force and logs.
	for deadline := time.Now().Add(5 * time.Second); b.Current().Version != a.version(t) || !strings.Contains(logs.String(), "runtime overrides applied"); {
		if time.Now().After(deadline) {
			t.Fatalf("node b in force: version %d, store %d", b.Current().Version, a.version(t))
		}
		time.Sleep(5 * time.Millisecond)
	}
	m := NewMetrics(nil, nil)
	m.RegisterLayers(b)
	rec := httptest.NewRecorder()
	m.handler(slog.Default()).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{fmt.Sprintf("usher_runtime_version %d\n", a.version(t)), "usher_runtime_overrides 1\n"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, rec.Body)
		}
	}
	if !strings.Contains(logs.String(), `msg="runtime overrides applied"`) || !strings.Contains(logs.String(), `changes="queue_all false → true"`) {
		t.Errorf("log of node b lacks the change:\n%s", logs.String())
	}
}

// TestLayersStartKeepsGoodRooms: at start, the overrides of a room that do
// not fit the file are left out (that room runs on the file), the others
// apply.
func TestLayersStartKeepsGoodRooms(t *testing.T) {
	store, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rt := &config.Runtime{}
	rt.SetRoom("sale", config.RoomOverrides{"queue_all": {Value: json.RawMessage(`true`)}})
	rt.SetRoom("other", config.RoomOverrides{"session_duration": {Value: json.RawMessage(`"1s"`)}})
	doc, _ := rt.Marshal()
	if _, err := store.SwapRuntime(context.Background(), 0, doc, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	l := NewLayers(store, slog.New(slog.NewTextHandler(&logs, nil)))
	eff := l.Start(context.Background(), mustParseConfig(t, apiConfig))
	if !eff.Rooms[0].QueueAll || eff.Rooms[1].SessionDuration != 5*time.Minute {
		t.Errorf("start: sale queue_all %v (want true), other session %s (want the file's 5m)", eff.Rooms[0].QueueAll, eff.Rooms[1].SessionDuration)
	}
	if !strings.Contains(logs.String(), "room=other") || !strings.Contains(logs.String(), "session_duration: must be at least 10s") ||
		!strings.Contains(logs.String(), `fix="usher room reset other"`) {
		t.Errorf("log lacks the room left out and why:\n%s", logs.String())
	}
	if l.Current().Version == 0 || l.Current().Runtime.Room("other") == nil {
		t.Error("the document in force lost the room's overrides (they must stay in the store, visible)")
	}
	v, _ := roomView(l.Current(), "other")
	if len(v.NotInForce) != 1 || !strings.Contains(v.NotInForce[0], "session_duration") || v.Overrides["session_duration"].Value != "1s" {
		t.Errorf("the view of the room left out: not in force %v, overrides %v", v.NotInForce, v.Overrides)
	}
	if v, _ := roomView(l.Current(), "sale"); len(v.NotInForce) != 0 {
		t.Errorf("sale: not in force %v", v.NotInForce)
	}
}

// TestLayersReload: a reloaded file gets the overrides over it; a file
// the overrides do not fit is refused and nothing changes.
func TestLayersReload(t *testing.T) {
	a := newAPITest(t, nil, "")
	a.do(t, "PATCH", "/api/v1/rooms/sale", writeToken, "*", `{"total_active_users": 999}`)
	next := mustParseConfig(t, strings.Replace(apiConfig, "new_users_per_minute: 300", "new_users_per_minute: 301", 1))
	if err := a.layers.SetFile(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	got := a.layers.Current().Effective.Rooms[0]
	if got.TotalActiveUsers != 999 || got.NewUsersPerMinute != 301 {
		t.Errorf("after reload: total %d (override 999), per minute %d (file's new 301)", got.TotalActiveUsers, got.NewUsersPerMinute)
	}
	// A file whose other room now takes sale's cookie: with sale's
	// routes overridden onto it, the cookies clash.
	a.do(t, "PATCH", "/api/v1/rooms/sale", writeToken, "*", `{"routes": [{"path": "/other/x"}], "cookie_suffix": "shared"}`)
	clash := mustParseConfig(t, strings.Replace(apiConfig, "cookie_suffix: other", "cookie_suffix: shared", 1))
	before := a.layers.Current()
	err := a.layers.SetFile(context.Background(), clash)
	if err == nil || !strings.Contains(err.Error(), "cookie __usher_wr_shared") || !strings.Contains(err.Error(), "usher room reset") {
		t.Fatalf("a reload the overrides do not fit: %v", err)
	}
	if a.layers.Current() != before {
		t.Error("a refused reload changed the layers in force")
	}
}

// TestClient drives the API through the client the CLI uses.
func TestClient(t *testing.T) {
	a := newAPITest(t, nil, "")
	srv := httptest.NewServer(a.h)
	defer srv.Close()
	ctx := context.Background()
	c := NewClient(strings.TrimPrefix(srv.URL, "http://"), writeToken)
	v, err := c.Room(ctx, "sale")
	if err != nil {
		t.Fatal(err)
	}
	v, err = c.PatchRoom(ctx, "sale", v.ETag, map[string]any{"total_active_users": 7, "suspended": true})
	if err != nil || v.Settings["total_active_users"] != 7.0 {
		t.Fatalf("PatchRoom: %v %v", v.Settings, err)
	}
	_, err = c.PatchRoom(ctx, "sale", v.ETag, map[string]any{"total_active_users": "lots"})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Field != "total_active_users" || !strings.Contains(ae.Error(), "must be an integer") {
		t.Fatalf("PatchRoom with a bad value: %v", err)
	}
	ev, err := c.Events(ctx, "sale")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateEvent(ctx, "sale", ev.ETag, map[string]any{"name": "x", "event_start_time": "2027-01-01T00:00:00Z", "event_end_time": "2027-01-01T01:00:00Z"}); err != nil {
		t.Fatal(err)
	}
	e, err := c.Event(ctx, "sale", "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteEvent(ctx, "sale", "x", e["etag"].(string)); err != nil {
		t.Fatal(err)
	}
	au, err := c.Audit(ctx, "sale", 10, 0)
	if err != nil || len(au.Entries) != 3 {
		t.Fatalf("Audit: %d entries, %v", len(au.Entries), err)
	}
	st, err := c.Status(ctx)
	if err != nil || len(st.Rooms) != 2 || !st.Rooms[0].Suspended {
		t.Fatalf("Status: %+v %v", st, err)
	}
	ro := NewClient(srv.URL, readToken)
	if _, err := ro.ResetRoom(ctx, "sale", "*"); !errors.As(err, &ae) || ae.Status != 403 {
		t.Fatalf("ResetRoom with the read token: %v", err)
	}
	if _, err := NewClient(srv.URL, "nope").Rooms(ctx); !errors.As(err, &ae) || ae.Status != 401 {
		t.Fatalf("Rooms with a bad token: %v", err)
	}
}
