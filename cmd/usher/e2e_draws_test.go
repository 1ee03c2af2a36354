package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/draw"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// drawsConfig is one node of three over one Redis: a room with an event
// whose pre-queue is shuffled (open from the start of the test), and a
// random room whose lottery draws every 2 s window.
const drawsConfig = `listen: %s
store:
  redis:
    addrs: [%s]
    timeout: 500ms
rooms:
  - id: drop
    name: Verifiable drop
    origin: %s
    routes:
      - path: /drop
    total_active_users: 100
    new_users_per_minute: 600
    session_duration: 15s
    queueing_method: fifo
    refresh_interval: 2s
    json_response_enabled: true
    events:
      - name: Spring drop
        prequeue_start_time: %s
        event_start_time: %s
        event_end_time: %s
        shuffle_at_event_start: true
        draw_beacon: "drand quicknet round 1234567"
  - id: lucky
    name: Verifiable lottery
    origin: %s
    routes:
      - path: /lucky
    total_active_users: 2
    new_users_per_minute: 600
    session_duration: 10s
    disable_session_renewal: true
    queueing_method: random
    refresh_interval: 2s
    json_response_enabled: true
`

// drawsVisitor is a visitor with its own cookie jar (cookies ignore the
// port, so it keeps its ticket from node to node).
type drawsVisitor struct {
	client *http.Client
	entry  string
	pos    float64
}

func newDrawsVisitor(t *testing.T) *drawsVisitor {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &drawsVisitor{client: &http.Client{Jar: jar, Timeout: 10 * time.Second}}
}

// visit asks url for JSON: the waiting answer (nil when admitted: the
// origin answered).
func (v *drawsVisitor) visit(url string) (map[string]any, error) {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	var j struct {
		W map[string]any `json:"usherWaitingRoom"`
	}
	if json.Unmarshal(body, &j) != nil || j.W == nil {
		return nil, nil // the origin's page: admitted
	}
	return j.W, nil
}

// getDraws reads /__usher/draws/<room> of a node.
func getDraws(t *testing.T, addr, room string) ([]byte, draw.Room) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/__usher/draws/" + room)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var pub draw.Room
	if resp.StatusCode != 200 || json.Unmarshal(body, &pub) != nil {
		t.Fatalf("draws of %s from %s: %d %s", room, addr, resp.StatusCode, body)
	}
	return body, pub
}

// runVerifyDrawBinary runs the real binary's verify-draw.
func runVerifyDrawBinary(t *testing.T, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command(usherBinary(t), append([]string{"verify-draw"}, args...)...).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// TestE2EDrawsThreeNodes: three nodes over one Redis run a real event
// with a shuffled pre-queue and a lottery room. Every node publishes the
// same commitments; 30 visitors joining the pre-queue through all three
// nodes are shown the places the revealed order gives them; the real
// binary's verify-draw confirms the shuffle (against the commitment read
// before the start) and the lottery's admissions from the published data
// alone, and reports one moved entry as a mismatch.
func TestE2EDrawsThreeNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about a minute and a half")
	}
	t.Parallel()
	usherBinary(t)
	rd := redistest.StartServer(t)
	origin := httptest.NewServer(bench.NewOrigin("draws shop"))
	t.Cleanup(origin.Close)
	now := time.Now().Truncate(time.Second)
	prequeue, start := now.Add(-time.Minute), now.Add(50*time.Second)
	dir := t.TempDir()
	var addrs []string
	for i := range 3 {
		addr := freeAddr(t)
		path := filepath.Join(dir, fmt.Sprintf("node%d.yaml", i))
		body := fmt.Sprintf(drawsConfig, addr, rd.Addr(), origin.URL, prequeue.UTC().Format(time.RFC3339),
			start.UTC().Format(time.RFC3339), start.Add(10*time.Minute).UTC().Format(time.RFC3339), origin.URL)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		startUsher(t, path, addr, "drop")
		addrs = append(addrs, addr)
	}
	if time.Until(start) < 20*time.Second {
		t.Fatalf("the nodes took too long to start: %v left before the event", time.Until(start))
	}

	// The commitment, before anyone joined: the same on every node.
	_, before := getDraws(t, addrs[0], "drop")
	if len(before.Draws) != 1 || before.Draws[0].Revealed {
		t.Fatalf("before the start: %+v, want one shuffle committed, not revealed", before)
	}
	commitment := before.Draws[0].Commitment
	for _, a := range addrs[1:] {
		if _, p := getDraws(t, a, "drop"); p.Draws[0].Commitment != commitment {
			t.Fatalf("node %s commits to %s, node %s to %s", a, p.Draws[0].Commitment, addrs[0], commitment)
		}
	}

	// The lottery's crowd, all along: 12 visitors following Refresh.
	lotteryDone := make(chan int)
	go func() {
		var mu sync.Mutex
		admitted := 0
		var wg sync.WaitGroup
		until := time.Now().Add(40 * time.Second)
		for i := range 12 {
			wg.Go(func() {
				v := newDrawsVisitor(t)
				for n := 0; time.Now().Before(until); n++ {
					w, err := v.visit("http://" + addrs[(i+n)%3] + "/lucky/")
					if err != nil {
						return
					}
					if w == nil {
						mu.Lock()
						admitted++
						mu.Unlock()
						return
					}
					refresh, _ := w["refreshIntervalSeconds"].(float64)
					time.Sleep(time.Duration(max(refresh, 1) * float64(time.Second)))
				}
			})
		}
		wg.Wait()
		lotteryDone <- admitted
	}()

	// 30 visitors join the pre-queue, through the three nodes in turn.
	vs := make([]*drawsVisitor, 30)
	for i := range vs {
		vs[i] = newDrawsVisitor(t)
		w, err := vs[i].visit("http://" + addrs[i%3] + "/drop/")
		if err != nil || w == nil || w["isEventPrequeueing"] != true {
			t.Fatalf("visitor %d in the pre-queue: %v %v", i, w, err)
		}
		vs[i].entry, _ = w["drawEntry"].(string)
		if w["drawId"] != draw.ShuffleID(start) || len(vs[i].entry) != 32 {
			t.Fatalf("visitor %d: draw %v entry %q", i, w["drawId"], vs[i].entry)
		}
	}
	// Once all have joined, each checks in again (on another node) and
	// reads its position.
	time.Sleep(3 * time.Second)
	for i, v := range vs {
		w, err := v.visit("http://" + addrs[(i+1)%3] + "/drop/")
		if err != nil || w == nil {
			t.Fatalf("visitor %d checking in: %v %v", i, w, err)
		}
		v.pos, _ = w["position"].(float64)
	}

	time.Sleep(time.Until(start.Add(2 * time.Second)))
	body, pub := getDraws(t, addrs[1], "drop")
	shuffle := pub.Draws[0]
	if !shuffle.Revealed || shuffle.Commitment != commitment || shuffle.Beacon != "drand quicknet round 1234567" || len(shuffle.Order) != 30 {
		t.Fatalf("after the start: revealed %v, commitment %s (was %s), beacon %q, %d entries", shuffle.Revealed,
			shuffle.Commitment, commitment, shuffle.Beacon, len(shuffle.Order))
	}
	for i, v := range vs {
		at := slices.IndexFunc(shuffle.Order, func(p draw.Placed) bool { return p.Entry == v.entry })
		if at < 0 {
			t.Fatalf("visitor %d's entry %s is not in the published order", i, v.entry)
		}
		ahead := 0
		for _, p := range shuffle.Order {
			if p.Place < shuffle.Order[at].Place {
				ahead++
			}
		}
		if v.pos != float64(ahead+1) {
			t.Errorf("visitor %d was shown position %v; the published order puts %d entries ahead of it", i, v.pos, ahead)
		}
	}
	saved := filepath.Join(dir, "drop.json")
	if err := os.WriteFile(saved, body, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out := runVerifyDrawBinary(t, "--room", "drop", "--commitment", commitment, "--entry", vs[7].entry, saved)
	if code != 0 || !strings.Contains(out, "verified: 30 entries") || !strings.Contains(out, "your entry is number") {
		t.Fatalf("verify-draw of the shuffle: exit %d\n%s", code, out)
	}
	t.Logf("verify-draw of the shuffle:\n%s", out)

	// One entry moved: a mismatch.
	moved := pub
	moved.Draws = slices.Clone(pub.Draws)
	order := slices.Clone(shuffle.Order)
	e := order[25]
	moved.Draws[0].Order = slices.Insert(slices.Delete(order, 25, 26), 2, e)
	b, _ := json.Marshal(moved)
	movedPath := filepath.Join(dir, "moved.json")
	if err := os.WriteFile(movedPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := runVerifyDrawBinary(t, movedPath); code != 1 || !strings.Contains(out, "MISMATCH") || !strings.Contains(out, "out of place") {
		t.Fatalf("verify-draw of the order with one entry moved: exit %d\n%s", code, out)
	}

	// The lottery: its admissions drawn as recorded, from a URL.
	admitted := <-lotteryDone
	time.Sleep(5 * time.Second) // two windows: the last draws are revealed
	_, lot := getDraws(t, addrs[2], "lucky")
	recorded := 0
	for _, d := range lot.Draws {
		for _, w := range d.Windows {
			recorded += len(w.Admitted)
		}
	}
	if recorded < 3 {
		t.Fatalf("%d lottery admissions published (%d visitors admitted, the first two at once)", recorded, admitted)
	}
	for _, a := range addrs[:2] {
		if _, p := getDraws(t, a, "lucky"); p.Draws[len(p.Draws)-1].Commitment != lot.Draws[len(lot.Draws)-1].Commitment {
			t.Fatalf("node %s commits to another next epoch", a)
		}
	}
	code, out = runVerifyDrawBinary(t, "--room", "lucky", "http://"+addrs[0]+"/__usher/draws/lucky")
	if code != 0 || !strings.Contains(out, "admissions drawn as recorded") {
		t.Fatalf("verify-draw of the lottery: exit %d\n%s", code, out)
	}
	t.Logf("lottery: %d admitted, %d by draws published; verify-draw:\n%s", admitted, recorded, out)
}
