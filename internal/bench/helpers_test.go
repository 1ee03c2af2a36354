package bench

import (
	"encoding/json"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"
)

// t0 is the start of every hand-made timeline, on a whole second.
var t0 = time.Unix(1_700_000_000, 0)

// at is t0 plus sec seconds (to the microsecond).
func at(sec float64) time.Time {
	return t0.Add(time.Duration(math.Round(sec*1e6)) * time.Microsecond)
}

// ats is at over several offsets.
func ats(secs ...float64) []time.Time {
	var out []time.Time
	for _, s := range secs {
		out = append(out, at(s))
	}
	return out
}

// admitted is a visitor that arrived at arr and was admitted at adm with no
// latency, making requests at reqs (the admitting one included when
// given).
func admitted(id string, arr, adm float64, reqs ...float64) Visitor {
	return Visitor{ID: id, Arrival: at(arr), Admitted: at(adm), Requests: ats(reqs...)}
}

// checkIns are waiting answers at the given offsets, wait unknown.
func checkIns(secs ...float64) []CheckIn {
	var out []CheckIn
	for _, s := range secs {
		out = append(out, CheckIn{At: at(s), Position: 1, Refresh: time.Second})
	}
	return out
}

func approx(tb testing.TB, name string, got, want float64) {
	tb.Helper()
	if math.Abs(got-want) > 1e-9 {
		tb.Errorf("%s = %v, want %v", name, got, want)
	}
}

// fakeGate stands in for usher: it admits the first admitFirst new
// visitors at once and everyone who checks in openAfter after it started
// (never when openAfter < 0); the others get a JSON waiting answer with a
// 1 s refresh. With requeueOn > 0 an admitted visitor's requeueOn-th
// request gets a waiting answer instead of the origin.
type fakeGate struct {
	origin     http.Handler
	admitFirst int
	openAfter  time.Duration
	requeueOn  int
	start      time.Time

	mu       sync.Mutex
	arrivals int
	inside   map[string]int // requests per admitted visitor
	badReqs  int            // requests without the bench headers
}

func newFakeGate(origin http.Handler, admitFirst int, openAfter time.Duration) *fakeGate {
	return &fakeGate{origin: origin, admitFirst: admitFirst, openAfter: openAfter, start: time.Now(), inside: map[string]int{}}
}

func (g *fakeGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(HeaderVisitor)
	c, _ := r.Cookie("gate")
	g.mu.Lock()
	if id == "" || r.Header.Get("Accept") != "application/json" {
		g.badReqs++
	}
	admit := c != nil && c.Value == "in"
	if admit {
		g.inside[id]++
		if g.requeueOn > 0 && g.inside[id] == g.requeueOn {
			admit = false
		}
	} else {
		if c == nil {
			g.arrivals++
			admit = g.arrivals <= g.admitFirst
		}
		if g.openAfter >= 0 && time.Since(g.start) >= g.openAfter {
			admit = true
		}
		if admit {
			g.inside[id]++
		}
	}
	g.mu.Unlock()
	if admit {
		http.SetCookie(w, &http.Cookie{Name: "gate", Value: "in", Path: "/"})
		g.origin.ServeHTTP(w, r)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: "gate", Value: "wait", Path: "/"})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"usherWaitingRoom": map[string]any{
		"inWaitingRoom": true, "waitTimeKnown": true, "waitTime": 1, "refreshIntervalSeconds": 1,
		"queueingMethod": "fifo", "isFIFOQueue": true, "position": 4, "peopleAhead": 3,
		"lastUpdated": time.Now().UTC().Format(time.RFC3339),
	}})
}
