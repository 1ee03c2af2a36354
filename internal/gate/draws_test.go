package gate_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/draw"
	"github.com/usherhq/usher/internal/gate"
)

// TestDrawsRoute: /__usher/draws/<room> publishes the room's draws as
// cacheable JSON (a shuffle committed before its pre-queue, not revealed;
// a random room's lottery epochs), the verify page comes with its script
// and a policy that lets it run nothing else, and anything else is
// refused.
func TestDrawsRoute(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	room := testRoom("shop")
	room.QueueingMethod = usher.Random
	room.Events = []usher.Event{{Name: "drop", PrequeueStart: now.Add(time.Hour), Start: now.Add(2 * time.Hour),
		End: now.Add(3 * time.Hour), ShuffleAtStart: true}}
	g, _ := featureGate(t, room, now, nil)
	get := func(target string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, httptest.NewRequest("GET", "http://shop.test"+target, nil))
		return rec
	}
	rec := get("/__usher/draws/shop")
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Cache-Control") != "public, max-age=5" {
		t.Fatalf("draws: %d %v %s", rec.Code, rec.Header(), rec.Body.String())
	}
	var pub draw.Room
	if err := json.Unmarshal(rec.Body.Bytes(), &pub); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, d := range pub.Draws {
		kinds[d.Kind]++
		if d.Kind == draw.KindShuffle && (d.Revealed || d.Secret != "" || len(d.Commitment) != 64) {
			t.Fatalf("a shuffle before its pre-queue: %+v", d)
		}
	}
	if pub.Room != "shop" || kinds[draw.KindShuffle] != 1 || kinds[draw.KindLottery] != 2 {
		t.Fatalf("published %+v, want one shuffle and the current and next lottery epochs", pub)
	}
	if again := get("/__usher/draws/shop"); again.Body.String() != rec.Body.String() {
		t.Fatal("a second read within the TTL published other commitments")
	}
	page := get("/__usher/draws/shop/verify")
	if page.Code != 200 || !strings.Contains(page.Body.String(), `<script src="verify.js">`) ||
		!strings.Contains(page.Header().Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("verify page: %d %v", page.Code, page.Header())
	}
	if js := get("/__usher/draws/shop/verify.js"); js.Code != 200 || !strings.Contains(js.Body.String(), "crypto.subtle") {
		t.Fatalf("verify script: %d", js.Code)
	}
	for _, target := range []string{"/__usher/draws/nope", "/__usher/draws/shop/other", "/__usher/draws/"} {
		if rec := get(target); rec.Code != 404 {
			t.Errorf("%s: %d, want 404", target, rec.Code)
		}
	}
	post := httptest.NewRecorder()
	g.ServeHTTP(post, httptest.NewRequest("POST", "http://shop.test/__usher/draws/shop", nil))
	if post.Code != 405 {
		t.Errorf("POST: %d, want 405", post.Code)
	}
}

// TestDrawEntryOnTheWaitingAnswer: a visitor in a shuffled pre-queue is
// told its draw and entry in the waiting JSON, and finds that entry in
// the order published at the start, which verifies.
func TestDrawEntryOnTheWaitingAnswer(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	start := now.Add(time.Minute)
	clock := now
	room := testRoom("shop")
	room.JSONResponseEnabled = true
	room.Events = []usher.Event{{Name: "drop", PrequeueStart: now.Add(-time.Minute), Start: start,
		End: start.Add(time.Hour), ShuffleAtStart: true}}
	g, _ := featureGate(t, room, now, func(o *gate.Options) { o.Now = func() time.Time { return clock } })
	var entries []string
	for range 5 {
		req := httptest.NewRequest("GET", "http://shop.test/", nil)
		req.Header.Set("Accept", "application/json")
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		var j struct {
			W struct {
				DrawID    string `json:"drawId"`
				DrawEntry string `json:"drawEntry"`
			} `json:"usherWaitingRoom"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &j); err != nil {
			t.Fatalf("%v: %s", err, rec.Body.String())
		}
		if j.W.DrawID != draw.ShuffleID(start) || len(j.W.DrawEntry) != 32 {
			t.Fatalf("waiting answer: draw %q entry %q", j.W.DrawID, j.W.DrawEntry)
		}
		entries = append(entries, j.W.DrawEntry)
	}
	clock = start.Add(time.Second)
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, httptest.NewRequest("GET", "http://shop.test/__usher/draws/shop", nil))
	var pub draw.Room
	if err := json.Unmarshal(rec.Body.Bytes(), &pub); err != nil || len(pub.Draws) != 1 {
		t.Fatalf("published: %v %s", err, rec.Body.String())
	}
	if p := draw.Verify("shop", pub.Draws[0]); len(p) != 0 || !pub.Draws[0].Revealed {
		t.Fatalf("the shuffle does not verify: %v", p)
	}
	found := map[string]bool{}
	for _, p := range pub.Draws[0].Order {
		found[p.Entry] = true
	}
	for _, e := range entries {
		if !found[e] {
			t.Fatalf("entry %s told to a visitor is not in the published order", e)
		}
	}
}
