package gate

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/autopilot"
)

// TestHealthRecorded: a governed room's proxied answers are counted for
// its autopilot (their latency, 5xx as errors, an origin that does not
// answer as an error); another room's are not.
func TestHealthRecorded(t *testing.T) {
	status := http.StatusOK
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		w.WriteHeader(status)
	}))
	defer slow.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	_ = ln.Close()
	var rec, deadRec autopilot.Recorder
	rooms := []*usher.Room{testRoom("sale", "/sale", slow.URL), testRoom("plain", "/plain", slow.URL), testRoom("gone", "/gone", dead)}
	g, _ := newGate(t, Options{Rooms: rooms, Health: func(room string) *autopilot.Recorder {
		switch room {
		case "sale":
			return &rec
		case "gone":
			return &deadRec
		}
		return nil
	}})
	for i := range 4 {
		if i == 3 {
			status = http.StatusServiceUnavailable
		}
		serve(g, httptest.NewRequest("GET", "/sale/x", nil))
		serve(g, httptest.NewRequest("GET", "/plain/x", nil))
	}
	serve(g, httptest.NewRequest("GET", "/gone", nil))
	s := rec.Snapshot()
	if s.Count != 4 || s.Errors != 1 {
		t.Errorf("sale: %d answers, %d errors; want 4 and 1 (the 503)", s.Count, s.Errors)
	}
	if p := s.Percentile(50); p < 20*time.Millisecond || p > time.Second {
		t.Errorf("sale: median latency %v, want at least the origin's 20ms", p)
	}
	if d := deadRec.Snapshot(); d.Count != 1 || d.Errors != 1 {
		t.Errorf("gone: %d answers, %d errors; want 1 and 1 (no answer)", d.Count, d.Errors)
	}
}
