package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// advFullRoomOfOne is a room of one with hour-long sessions: one visitor
// fills it for the whole test.
const advFullRoomOfOne = `  - id: sale
    origin: ORIGIN
    total_active_users: 1
    new_users_per_minute: 600
    session_duration: 1h
    refresh_interval: 2s
    json_response_enabled: true
`

// TestE2EAdversarySlowBodies plays issue 8's defect 10 (slow clients): 20
// clients at once send a request whose body is announced (100,000 bytes,
// or chunked) and then send it a byte every 500 ms, to a full room.
// Asserted: each gets its waiting answer within 5 s, long before its body
// could be complete, and the server closes the connection (a read ends)
// within 6 s; none reaches the origin.
func TestE2EAdversarySlowBodies(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", "", advFullRoomOfOne, "sale")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	newAdvClient("filler", rt).mustAdmit(t, n.url("/buy"), "first")
	heads := []string{
		"POST /buy HTTP/1.1\r\nHost: shop.example\r\nAccept: application/json\r\nContent-Length: 100000\r\n\r\n",
		"POST /buy HTTP/1.1\r\nHost: shop.example\r\nAccept: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
		"PUT /buy HTTP/1.1\r\nHost: shop.example\r\nContent-Length: 100000\r\n\r\n",
		"POST /__usher/status/sale HTTP/1.1\r\nHost: shop.example\r\nContent-Length: 100000\r\n\r\n",
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var answered, closed []time.Duration
	for i := range 20 {
		wg.Go(func() {
			head := heads[i%len(heads)]
			conn, err := net.DialTimeout("tcp", n.addr, 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			start := time.Now()
			_ = conn.SetDeadline(start.Add(15 * time.Second))
			if _, err := io.WriteString(conn, head+"abc"); err != nil {
				t.Error(err)
				return
			}
			// Keep sending a byte every 500 ms, as a slow client does.
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(500 * time.Millisecond):
					}
					if _, err := conn.Write([]byte("x")); err != nil {
						return
					}
				}
			}()
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, &http.Request{Method: "POST"})
			if err != nil {
				t.Errorf("%q: no answer: %v", firstLine(head), err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			got := time.Since(start)
			// The server closes the connection: a read ends now, not when
			// the body would be complete.
			var one [1]byte
			_, err = br.Read(one[:])
			end := time.Since(start)
			mu.Lock()
			answered, closed = append(answered, got), append(closed, end)
			mu.Unlock()
			if got > 5*time.Second {
				t.Errorf("%q: the answer took %v", firstLine(head), got)
			}
			if err == nil || end > 6*time.Second {
				t.Errorf("%q: the connection stayed open (%v after %v)", firstLine(head), err, end)
			}
		})
	}
	wg.Wait()
	t.Logf("slow bodies: 20 clients; answers after at most %v, connections closed after at most %v; requests reaching the origin past the full room: %d",
		maxDuration(answered), maxDuration(closed), len(n.origin.hits(nil))-1)
	if hits := n.origin.hits(nil); len(hits) != 1 {
		t.Errorf("the origin got %d requests, want the filler's 1", len(hits))
	}
}

func maxDuration(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m.Round(time.Millisecond)
}

// TestE2EAdversaryRequestIDFollowsReload plays issue 8's defect 11: the
// request-id middleware kept the trusted proxies of the start. A client
// sends its own X-Request-Id; the config is reloaded to trust loopback,
// then to trust nobody again. Asserted: the id is kept (echoed, and sent
// to the origin) only while loopback is trusted.
func TestE2EAdversaryRequestIDFollowsReload(t *testing.T) {
	advSkip(t)
	t.Parallel()
	rooms := `  - id: sale
    origin: ORIGIN
    routes:
      - path: /sale
    total_active_users: 100
    new_users_per_minute: 600
    json_response_enabled: true
`
	n := newAdvNode(t, "", "origin: ORIGIN\n", rooms, "sale")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	check := func(stage string, trusted bool) {
		t.Helper()
		id := fmt.Sprintf("adv-%d", time.Now().UnixNano())
		req, _ := http.NewRequest(http.MethodGet, n.url("/about"), nil)
		req.Header.Set("X-Request-Id", id)
		req.Header.Set(advClientHeader, id)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		echoed := resp.Header.Get("X-Request-Id") == id
		if echoed != trusted {
			t.Errorf("%s: X-Request-Id %q echoed as %q; want it kept: %v", stage, id, resp.Header.Get("X-Request-Id"), trusted)
		}
		t.Logf("%s: a client's X-Request-Id kept: %v", stage, echoed)
	}
	check("no trusted proxies", false)
	n.reload(t, "origin: ORIGIN\ntrusted_proxies: [127.0.0.0/8]\n", rooms)
	check("loopback trusted after a reload", true)
	n.reload(t, "origin: ORIGIN\n", rooms)
	check("nobody trusted after another reload", false)
}
