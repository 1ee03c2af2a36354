package admin

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/store/local"
)

// The tokens of the API tests: the write token named admin, and a read
// token named viewer.
const (
	writeToken = "w-token"
	readToken  = "r-token"
)

const apiConfig = `origin: http://127.0.0.1:3000
rooms:
  - id: sale
    name: Big Sale
    routes:
      - path: /sale
    cookie_suffix: sale
    total_active_users: 200
    new_users_per_minute: 300
    events:
      - name: drop
        event_start_time: 2026-12-01T10:00:00Z
        event_end_time: 2026-12-01T12:00:00Z
        total_active_users: 400
    rules:
      - description: office
        expression: ip.in_cidr("10.0.0.0/8")
  - id: other
    routes:
      - path: /other
    cookie_suffix: other
    total_active_users: 10
    new_users_per_minute: 10
`

// apiTest is an admin handler over layers on an in-memory store, with
// the configs it applied.
type apiTest struct {
	h      *Handler
	layers *Layers
	store  usher.Store

	mu      sync.Mutex
	applied []*config.Config
}

func mustParseConfig(tb testing.TB, text string) *config.Config {
	tb.Helper()
	c, err := config.Parse(strings.NewReader(text))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// newAPITest returns the API of a node running apiConfig (or text) on
// store (nil: a new in-memory store).
func newAPITest(tb testing.TB, store usher.Store, text string) *apiTest {
	tb.Helper()
	if store == nil {
		s, err := local.Open(local.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { s.Close() })
		store = s
	}
	if text == "" {
		text = apiConfig
	}
	a := &apiTest{store: store}
	log := slog.New(slog.DiscardHandler)
	a.layers = NewLayers(store, log)
	a.layers.Start(context.Background(), mustParseConfig(tb, text))
	a.layers.SetApply(func(c *config.Config) error {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.applied = append(a.applied, c)
		return nil
	})
	a.h = New(Options{
		Token:  writeToken,
		Tokens: []Token{{Name: "viewer", Secret: readToken}},
		Layers: a.layers,
		Rooms: func() []*usher.Room {
			eff := a.layers.Current().Effective
			out := make([]*usher.Room, len(eff.Rooms))
			for i := range eff.Rooms {
				out[i] = &eff.Rooms[i]
			}
			return out
		},
		Status: func(context.Context, *usher.Room, time.Time) (usher.RoomStats, error) {
			return usher.RoomStats{Active: 3, Waiting: 4, AdmittedLastMinute: 5, Slots: 6}, nil
		},
		Logger: log,
		Now:    func() time.Time { return testNow },
	})
	return a
}

// do sends a request: token "" sends none; ifMatch "" sends none.
func (a *apiTest) do(tb testing.TB, method, path, token, ifMatch, body string) *httptest.ResponseRecorder {
	tb.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	return rec
}

// etag GETs path and returns its ETag.
func (a *apiTest) etag(tb testing.TB, path string) string {
	tb.Helper()
	rec := a.do(tb, "GET", path, readToken, "", "")
	if rec.Code != http.StatusOK || rec.Header().Get("ETag") == "" {
		tb.Fatalf("GET %s: %d, ETag %q; body %s", path, rec.Code, rec.Header().Get("ETag"), rec.Body)
	}
	return rec.Header().Get("ETag")
}

// room GETs a room's view.
func (a *apiTest) room(tb testing.TB, id string) RoomView {
	tb.Helper()
	rec := a.do(tb, "GET", "/api/v1/rooms/"+id, readToken, "", "")
	if rec.Code != http.StatusOK {
		tb.Fatalf("GET room %s: %d %s", id, rec.Code, rec.Body)
	}
	return MustDecode[RoomView](tb, rec)
}

// version returns the store's runtime version.
func (a *apiTest) version(tb testing.TB) int64 {
	tb.Helper()
	v, err := a.store.RuntimeVersion(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// appliedCount returns how many configs the node applied.
func (a *apiTest) appliedCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.applied)
}

// audit reads the audit log through the API.
func (a *apiTest) audit(tb testing.TB, query string) AuditView {
	tb.Helper()
	rec := a.do(tb, "GET", "/api/v1/audit"+query, readToken, "", "")
	if rec.Code != http.StatusOK {
		tb.Fatalf("GET audit: %d %s", rec.Code, rec.Body)
	}
	return MustDecode[AuditView](tb, rec)
}

// apiErr decodes an error answer.
func apiErr(tb testing.TB, rec *httptest.ResponseRecorder) errorBody {
	tb.Helper()
	var e errorJSON
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		tb.Fatalf("error body %s: %v", rec.Body, err)
	}
	return e.Error
}
