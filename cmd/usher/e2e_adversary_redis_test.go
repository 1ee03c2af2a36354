package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/store/redis/redistest"
	"github.com/usherhq/usher/internal/ticket"
)

// hangUp sends request on a new connection to addr and closes it at once,
// before any answer: with rst, by a reset (SO_LINGER 0) rather than a FIN.
func hangUp(addr, request string, rst bool) error {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	if rst {
		_ = conn.(*net.TCPConn).SetLinger(0)
	}
	_, err = io.WriteString(conn, request)
	conn.Close()
	return err
}

// TestE2EAdversaryHangUpsFailOpen plays issue 8's defect 5: client
// hang-ups trip the Redis breaker. A node on a real redis-server with
// fail_mode open, and a room of one, full. For 20 rounds, eight clients
// send a request and close the connection before the answer (four with a
// FIN, four with a reset), then one client sends a GET; meanwhile a
// hundred more hang-ups come in the background. Asserted: no GET is
// admitted past the full room; the fail mode never engages
// (usher_failmode_decisions_total 0, usher_store_errors_total 0,
// usher_store_up 1); the room still counts one session.
func TestE2EAdversaryHangUpsFailOpen(t *testing.T) {
	advSkip(t)
	t.Parallel()
	rd := redistest.StartServer(t)
	n := newAdvNode(t, advRedis(rd.Addr(), "open"), "", `  - id: sale
    origin: ORIGIN
    total_active_users: 1
    new_users_per_minute: 600
    session_duration: 10m
    refresh_interval: 2s
    json_response_enabled: true
`, "sale")
	url := n.url("/buy")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	newAdvClient("filler", rt).mustAdmit(t, url, "first")
	const request = "GET /buy HTTP/1.1\r\nHost: shop.example\r\nAccept: application/json\r\n\r\n"

	stop := make(chan struct{})
	var bg sync.WaitGroup
	background := 0
	bg.Go(func() {
		for background < 100 {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if err := hangUp(n.addr, request, background%2 == 0); err != nil {
				t.Errorf("background hang-up: %v", err)
				return
			}
			background++
		}
	})
	hangUps, admitted := 0, 0
	for round := range 20 {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				if err := hangUp(n.addr, request, i%2 == 0); err != nil {
					t.Errorf("hang-up: %v", err)
				}
			})
		}
		wg.Wait()
		hangUps += 8
		a := newAdvClient(fmt.Sprintf("get%d", round), rt).must(t, url)
		if a.origin {
			admitted++
			t.Errorf("round %d: a GET after hang-ups was admitted past the full room", round)
		} else if !a.waiting {
			t.Errorf("round %d: %d %q, want a waiting answer", round, a.status, a.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	bg.Wait()
	time.Sleep(500 * time.Millisecond) // decisions of the last hang-ups finish
	failMode := n.metric(t, "usher_failmode_decisions_total")
	storeErrs := n.metric(t, "usher_store_errors_total")
	up := n.metric(t, "usher_store_up")
	st, err := n.status("sale")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("hang-ups: %d clients hung up before their answer; GETs admitted past the full room: %d of 20; fail-mode decisions %.0f, store errors %.0f, store up %.0f; room: %d active",
		hangUps+background, admitted, failMode, storeErrs, up, st.Active)
	if failMode != 0 || storeErrs != 0 || up != 1 {
		t.Errorf("hang-ups switched the fail mode: %.0f fail-mode decisions, %.0f store errors, store up %.0f", failMode, storeErrs, up)
	}
	if st.Active != 1 {
		t.Errorf("the room counts %d sessions, want the filler's 1", st.Active)
	}
	if log := n.log(); strings.Contains(log, "applying the fail mode") {
		t.Errorf("the node applied the fail mode:\n%s", log)
	}
}

// TestE2EAdversaryNodeKilledMidRenewal plays issue 8's defect 8: a node
// that dies mid-renewal undercounts. Three nodes on one real redis-server
// behind a round-robin balancer, a room of 10 with 20 s sessions (renewed
// every second of browsing), 30 visitors in a flash crowd who browse for
// 30-45 s, longer than a session, so that every session lives on its
// renewals. One node after the other is killed with SIGKILL every 4 s and
// started again. Asserted with the bench report: no more than 10 sessions
// ever run at once as the visitors see them (max_active_ratio <= 1), no
// more than the rate, and no browsing visitor is sent back to the line.
func TestE2EAdversaryNodeKilledMidRenewal(t *testing.T) {
	advSkip(t)
	t.Parallel()
	usherBinary(t)
	rd := redistest.StartServer(t)
	shop := httptest.NewServer(bench.NewOrigin("renewal shop"))
	t.Cleanup(shop.Close)
	rooms := fmt.Sprintf(`  - id: sale
    origin: %s
    total_active_users: 10
    new_users_per_minute: 600
    session_duration: 20s
    refresh_interval: 2s
    json_response_enabled: true
`, shop.URL)
	key, err := ticket.GenerateKey("adv1")
	if err != nil {
		t.Fatal(err)
	}
	origin := newAdvOrigin(t)
	var nodes []*advNode
	var addrs []string
	for range 3 {
		nd := startAdvNode(t, key, origin, advRedis(rd.Addr(), "closed"), "", rooms, "sale")
		nodes, addrs = append(nodes, nd), append(addrs, nd.addr)
	}
	lb := newBalancer(addrs)
	t.Cleanup(lb.Close)
	arr, err := bench.ParseArrivals("flash:30@3s")
	if err != nil {
		t.Fatal(err)
	}
	limits := bench.Limits{TotalActiveUsers: 10, NewUsersPerMinute: 600, SessionDuration: 20 * time.Second, RefreshInterval: 2 * time.Second}
	type run struct {
		tl  *bench.Timeline
		err error
	}
	done := make(chan run, 1)
	go func() {
		tl, err := bench.Run(context.Background(), bench.Config{
			Target:   lb.URL + "/",
			Arrivals: arr,
			Seed:     8,
			Model: bench.VisitorModel{
				Browse:       bench.Uniform(30*time.Second, 45*time.Second),
				RequestEvery: bench.Uniform(500*time.Millisecond, 1500*time.Millisecond),
			},
			Timeout:    10 * time.Second,
			RetryDelay: 500 * time.Millisecond,
			MaxErrors:  10,
			Horizon:    80 * time.Second,
		})
		done <- run{tl, err}
	}()
	kills := 0
	var r run
	tick := time.NewTicker(4 * time.Second)
	defer tick.Stop()
loop:
	for {
		select {
		case r = <-done:
			break loop
		case <-tick.C:
			if kills < 16 {
				nodes[kills%3].restart(t)
				kills++
			}
		}
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	res := bench.Report(r.tl, limits)
	js, _ := json.Marshal(res)
	t.Logf("node killed mid-renewal: %d SIGKILLs of 3 nodes in %.0f s; report: %s", kills, res.DurationS, js)
	if res.Admitted < 20 {
		t.Errorf("only %d visitors admitted: the run did not exercise the room", res.Admitted)
	}
	if res.MaxActiveRatio > 1 {
		t.Errorf("%d sessions ran at once, over the limit of 10 (max_active_ratio %.2f)", res.MaxActive, res.MaxActiveRatio)
	}
	if res.MaxRateRatio > 1 {
		t.Errorf("%d admissions in 60 s, over the limit", res.MaxRate)
	}
	if res.RequeuedWhileBrowsing != 0 {
		t.Errorf("%d browsing visitors were sent back to the line", res.RequeuedWhileBrowsing)
	}
	for _, v := range r.tl.Visitors {
		if !v.Admitted.IsZero() && (v.Requeued != 0 || v.GaveUp) {
			t.Errorf("admitted visitor %s lost its session: requeued %d, gave up %v, errors %+v", v.ID, v.Requeued, v.GaveUp, v.Errors)
		}
	}
}

// TestE2EAdversaryFailOpenFloodMemory plays issue 8's defect 10 (memory)
// with fail_mode open: Redis is stopped, and a flood of new visitors
// without cookies, each from another address (through trusted proxies,
// with a per-client limit on), is admitted uncounted; two seconds later
// each comes back with its admitted cookie, when its session (10 s) is due
// for renewal. The node's resident memory (VmRSS) is read after a warm-up
// of 50,000 visitors in two floods (more than the fixed-size caches hold,
// such as the admission tokens' 10,000, and enough for the heap to settle:
// after one flood of 30,000, a loaded machine, the whole suite running,
// still saw 5.3 MB of settling in the next flood and 0.6 MB in the one
// after) and after
// two more floods of 20,000. Asserted: the fail mode engaged, and the two
// floods grow the memory by less than 5 MB (a record per visitor, such as
// the renewals the engine kept until Redis was back before the fix, grew
// it by 7.3 to 8 MB here; after the fix, 0 to 3 MB as the heap settles).
func TestE2EAdversaryFailOpenFloodMemory(t *testing.T) {
	advSkip(t)
	t.Parallel()
	rd := redistest.StartServer(t)
	n := newAdvNode(t, advRedis(rd.Addr(), "open"), "trusted_proxies: [127.0.0.0/8]\n", `  - id: sale
    origin: ORIGIN
    total_active_users: 10
    new_users_per_minute: 600
    session_duration: 10s
    refresh_interval: 20s
    json_response_enabled: true
    client_limit:
      new_visitors_per_minute: 5
`, "sale")
	rd.Kill()
	url := n.url("/buy")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	next := 0
	var mu sync.Mutex
	errs, admitted, renewed := 0, 0, 0
	// each sends the request of each of count visitors (req, from the
	// visitor's address), from 8 workers.
	each := func(count int, req func(c *advClient, i int) error) {
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				c := newAdvClient(fmt.Sprintf("flood%d", w), rt)
				for i := w; i < count; i += 8 {
					id := next + i
					c.xff = fmt.Sprintf("10.%d.%d.%d", id>>16&255, id>>8&255, id&255)
					if err := req(c, i); err != nil {
						mu.Lock()
						errs++
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
	}
	flood := func(count int) {
		began := time.Now()
		cookies := make([]*http.Cookie, count)
		each(count, func(c *advClient, i int) error {
			a, err := c.send(url, nil)
			if err == nil && a.origin {
				cookies[i] = a.set
				mu.Lock()
				admitted++
				mu.Unlock()
			}
			return err
		})
		time.Sleep(time.Until(began.Add(2 * time.Second)))
		each(count, func(c *advClient, i int) error {
			if cookies[i] == nil {
				return nil
			}
			a, err := c.send(url, cookies[i])
			if err == nil && a.origin {
				mu.Lock()
				renewed++
				mu.Unlock()
			}
			return err
		})
		next += count
	}
	flood(30000)
	flood(20000)
	rss0 := rssKB(t, n.pid())
	start := time.Now()
	flood(20000)
	rss1 := rssKB(t, n.pid())
	flood(20000)
	rss2 := rssKB(t, n.pid())
	failMode := n.metric(t, "usher_failmode_decisions_total")
	t.Logf("fail-open flood: 40,000 new visitors from 40,000 addresses, each back once with its cookie, in %.1f s with Redis down; VmRSS %d kB after the warm-up, %d kB (+%d) after 20,000, %d kB (+%d) after 40,000; fail-mode decisions %.0f",
		time.Since(start).Seconds(), rss0, rss1, rss1-rss0, rss2, rss2-rss1, failMode)
	if errs > 0 {
		t.Errorf("%d requests of the flood failed", errs)
	}
	if failMode < 40000 || admitted != 90000 || renewed != 90000 {
		t.Errorf("%.0f fail-mode decisions, %d visitors admitted, %d back in: the flood did not run on the fail mode", failMode, admitted, renewed)
	}
	if rss2-rss0 > 5<<10 {
		t.Errorf("the node's memory grew with the flood: %d kB, +%d kB, +%d kB", rss0, rss1-rss0, rss2-rss1)
	}
}
