package main

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// advSessionRoom is room sale with the limit, session and renewal given,
// and extra fields (an event) appended.
func advSessionRoom(total int, session string, noRenewal bool, extra string) string {
	return fmt.Sprintf(`  - id: sale
    origin: ORIGIN
    total_active_users: %d
    new_users_per_minute: 600
    session_duration: %s
    disable_session_renewal: %v
    refresh_interval: 1s
    json_response_enabled: true
%s`, total, session, noRenewal, extra)
}

// advEventNow is an event running from a minute ago for an hour, with the
// session given.
func advEventNow(session string, noRenewal bool) string {
	now := time.Now().UTC()
	return fmt.Sprintf(`    events:
      - name: settings change
        event_start_time: %s
        event_end_time: %s
        session_duration: %s
        disable_session_renewal: %v
`, now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339), session, noRenewal)
}

// fillRoom admits new visitors until one is told to wait, and returns
// those admitted.
func fillRoom(t *testing.T, n *advNode, url, prefix string, rt http.RoundTripper) []*advClient {
	t.Helper()
	var in []*advClient
	for i := range 50 {
		c := newAdvClient(fmt.Sprintf("%s%d", prefix, i), rt)
		a := c.must(t, url)
		if a.waiting {
			return in
		}
		if !a.origin {
			t.Fatalf("%s: %d %q, want admitted or waiting", c.name, a.status, a.body)
		}
		in = append(in, c)
	}
	t.Fatal("the room did not fill with 50 visitors")
	return nil
}

// TestE2EAdversaryLongerSessionRevivesNothing plays issue 8's defect 1: a
// longer session_duration revives ended sessions. 20 visitors are admitted
// (10 s sessions, no renewal) and keep their tickets after their sessions
// end. The config is then reloaded three times: the room cut to 3 with
// sessions of an hour (and filled by three new visitors); renewal on; an
// event running now with sessions of two hours. After each change the 20
// stockpiled tickets are presented while the room is full. Asserted: none
// reaches the origin (revived sessions 0), the three sessions inside are
// kept, and the room never counts more than them.
func TestE2EAdversaryLongerSessionRevivesNothing(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", "", advSessionRoom(20, "10s", true, ""), "sale")
	url := n.url("/buy")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	var stock []*advClient
	var ended time.Time
	for i := range 20 {
		c := newAdvClient(fmt.Sprintf("stock%02d", i), rt)
		a := c.mustAdmit(t, url, "stockpiling")
		tk, err := n.open("sale", a.set)
		if err != nil {
			t.Fatal(err)
		}
		c.follow = false // the ticket is kept as it was
		stock = append(stock, c)
		ended = tk.Until
	}
	time.Sleep(time.Until(ended.Add(1500 * time.Millisecond)))

	stages := []struct {
		name  string
		rooms string
	}{
		{"cut to 3 with sessions of an hour", advSessionRoom(3, "1h", true, "")},
		{"renewal on", advSessionRoom(3, "1h", false, "")},
		{"an event with sessions of two hours", advSessionRoom(3, "1h", false, advEventNow("2h", false))},
	}
	revived, presented := 0, 0
	var in []*advClient
	for i, st := range stages {
		n.reload(t, "", st.rooms)
		if i == 0 {
			// The room's sessions now last an hour: filled once, it stays
			// full.
			in = fillRoom(t, n, url, "fill-", rt)
		}
		status, err := n.status("sale")
		if err != nil {
			t.Fatal(err)
		}
		if status.Slots != 0 || status.Active > 3 {
			t.Fatalf("%s: after filling, the room counts %d active, %d slots; want full at 3", st.name, status.Active, status.Slots)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, c := range stock {
			wg.Go(func() {
				a, err := c.get(url)
				mu.Lock()
				defer mu.Unlock()
				presented++
				switch {
				case err != nil:
					t.Errorf("%s: %v", st.name, err)
				case a.origin:
					revived++
					t.Errorf("%s: stockpiled ticket %s, whose session ended, reached the origin of the full room", st.name, c.name)
				case !a.waiting:
					t.Errorf("%s: stockpiled ticket %s: %d %q, want a waiting answer", st.name, c.name, a.status, a.body)
				}
			})
		}
		wg.Wait()
		status, err = n.status("sale")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d visitors inside; after the stockpile: %d active, %d waiting", st.name, len(in), status.Active, status.Waiting)
		for _, c := range in {
			c.mustAdmit(t, url, "in the room it filled")
		}
		if status.Active > 3 {
			t.Errorf("%s: the room counts %d active sessions, over its limit of 3", st.name, status.Active)
		}
	}
	t.Logf("revived sessions: %d of %d presentations of 20 stockpiled tickets over %d settings changes", revived, presented, len(stages))
}

// TestE2EAdversaryShorterSessionNeverUndercounts plays issue 8's defect 2:
// a shorter session_duration drives the active count negative. Five
// visitors are admitted to a room of five with 5 min sessions; the config
// is reloaded with 10 s sessions, then with an event running now with
// 10 s sessions. For 20 s after each change every visitor sends six
// parallel requests every 2 s with the ticket it holds, and one with the
// ticket it was first given, while a new visitor asks every second.
// Asserted: every visitor request reaches the origin (sessions are kept),
// no new visitor is admitted, and the room's active count stays at 5
// (never negative, never less than the sessions running).
func TestE2EAdversaryShorterSessionNeverUndercounts(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", "", advSessionRoom(5, "5m", false, ""), "sale")
	url := n.url("/buy")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	var in []*advClient
	var first []*advClient // the same visitors, holding their first tickets
	for i := range 5 {
		c := newAdvClient(fmt.Sprintf("v%d", i), rt)
		a := c.mustAdmit(t, url, "filling the room")
		old := newAdvClient(c.name+"-old", rt)
		old.follow = false
		old.setTicket(a.set)
		in, first = append(in, c), append(first, old)
	}
	newAdvClient("probe", rt).mustWait(t, url, "in the full room")

	kept, newIn, probes := 0, 0, 0
	var low, high int64 = 5, 5
	for _, st := range []struct {
		name  string
		rooms string
	}{
		{"sessions of 10 s", advSessionRoom(5, "10s", false, "")},
		{"an event with sessions of 10 s", advSessionRoom(5, "5m", false, advEventNow("10s", false))},
	} {
		n.reload(t, "", st.rooms)
		end := time.Now().Add(20 * time.Second)
		for round := 0; time.Now().Before(end); round++ {
			if round%2 == 0 {
				var wg sync.WaitGroup
				var mu sync.Mutex
				for i, c := range in {
					for range 6 {
						wg.Go(func() {
							a, err := c.get(url)
							mu.Lock()
							defer mu.Unlock()
							if err != nil || !a.origin {
								t.Errorf("%s: visitor %s lost its running session: %d %v %q", st.name, c.name, a.status, err, a.body)
								return
							}
							kept++
						})
					}
					wg.Go(func() {
						a, err := first[i].get(url)
						if err != nil || !a.origin {
							t.Errorf("%s: visitor %s's first ticket lost its running session: %d %v", st.name, c.name, a.status, err)
						}
					})
				}
				wg.Wait()
			}
			a := newAdvClient(fmt.Sprintf("new%d", probes), rt).must(t, url)
			probes++
			if a.origin {
				newIn++
				t.Errorf("%s: a new visitor was admitted with 5 sessions running in a room of 5", st.name)
			}
			s, err := n.status("sale")
			if err != nil {
				t.Fatal(err)
			}
			low, high = min(low, s.Active), max(high, s.Active)
			time.Sleep(time.Second)
		}
	}
	t.Logf("shorter sessions: %d visitor requests kept their sessions; new visitors admitted past the limit: %d of %d; active count between %d and %d (5 sessions running)",
		kept, newIn, probes, low, high)
	if low != 5 || high != 5 {
		t.Errorf("the room's active count went from %d to %d with 5 sessions running, want 5 throughout", low, high)
	}
}
