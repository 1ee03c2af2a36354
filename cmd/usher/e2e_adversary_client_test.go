package main

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// advTrusted puts usher behind a "proxy" on loopback, so that the tests
// play many clients by X-Forwarded-For.
const advTrusted = "trusted_proxies: [127.0.0.0/8]\n"

// advLimitRoom is a full-able room on /id with a per-client limit of 5 new
// visitors a minute per /24 (or /64).
func advLimitRoom(id string, total int, session, overLimit string) string {
	return fmt.Sprintf(`  - id: %s
    origin: ORIGIN
    routes:
      - path: /%s
    total_active_users: %d
    new_users_per_minute: 600
    session_duration: %s
    refresh_interval: 2s
    json_response_enabled: true
    client_limit:
      new_visitors_per_minute: 5
      ipv4_prefix: 24
      over_limit: %s
`, id, id, total, session, overLimit)
}

// TestE2EAdversaryClientLimitQueue plays Queue-it's "several places in line
// via several browsers or devices" against client_limit (5 new visitors a
// minute per /24, over the limit to the back of the line): in a full room
// one client takes 30 places in a few seconds without cookies (each a new
// browser), from 30 addresses of one /24; then 5 honest visitors arrive
// from other networks; everyone checks in when told. Asserted: the client
// holds at most 5 places ahead of the honest visitors (the k-th honest
// visitor is at most at place 5 + k), and its other places are behind all
// of them.
func TestE2EAdversaryClientLimitQueue(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", advTrusted, advLimitRoom("sale", 1, "1h", "queue"), "sale")
	url := n.url("/sale/buy")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	filler := newAdvClient("filler", rt)
	filler.xff = "192.0.2.1"
	filler.mustAdmit(t, url, "first")

	var bot, honest []*advClient
	for i := range 30 {
		c := newAdvClient(fmt.Sprintf("bot%02d", i), rt)
		c.xff = fmt.Sprintf("203.0.113.%d", i+1)
		c.mustWait(t, url, "taking a place")
		bot = append(bot, c)
	}
	nextSecond()
	for i := range 5 {
		c := newAdvClient(fmt.Sprintf("honest%d", i), rt)
		c.xff = fmt.Sprintf("198.51.%d.7", 100+i)
		a := c.mustWait(t, url, "arriving")
		if a.position > int64(5+i+1) {
			t.Errorf("honest visitor %d arrived at place %d, behind more than the client's 5 places", i+1, a.position)
		}
		honest = append(honest, c)
	}
	// Everyone checks in (the places are live), then every position is
	// read again.
	time.Sleep(2100 * time.Millisecond)
	positions := func(cs []*advClient) []int64 {
		out := make([]int64, len(cs))
		var wg sync.WaitGroup
		for i, c := range cs {
			wg.Go(func() { out[i] = c.mustWait(t, url, "checking in").position })
		}
		wg.Wait()
		return out
	}
	bp := positions(bot)
	hp := positions(honest)
	lastHonest := int64(0)
	for i, p := range hp {
		lastHonest = max(lastHonest, p)
		if p > int64(5+i+1) {
			t.Errorf("honest visitor %d is at place %d, behind more than the client's 5 places", i+1, p)
		}
	}
	ahead := 0
	for _, p := range bp {
		if p < lastHonest {
			ahead++
		}
	}
	t.Logf("per-client limit (queue): one /24 took 30 places in a minute; %d of them ahead of the last honest visitor (place %d); honest places %v; the client's places %v",
		ahead, lastHonest, hp, bp)
	if ahead > 5 {
		t.Errorf("the client holds %d places ahead of honest visitors, over its limit of 5 a minute", ahead)
	}
}

// TestE2EAdversaryClientLimitReject plays the same attack against
// client_limit with over_limit reject, in a room with free places: 20 new
// visits from one /24 (IPv4) and 10 from one /64 (IPv6). Asserted: each
// client gets 5, the rest 429 with Retry-After: 60 and no ticket; another
// client is still admitted.
func TestE2EAdversaryClientLimitReject(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", advTrusted, advLimitRoom("sale", 100, "1h", "reject"), "sale")
	url := n.url("/sale/buy")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	for _, att := range []struct {
		name  string
		count int
		addr  func(int) string
	}{
		{"IPv4 /24", 20, func(i int) string { return fmt.Sprintf("203.0.113.%d", i+1) }},
		{"IPv6 /64", 10, func(i int) string { return fmt.Sprintf("2001:db8:1:2::%x", i+1) }},
	} {
		in, refused := 0, 0
		for i := range att.count {
			c := newAdvClient(fmt.Sprintf("bot%02d", i), rt)
			c.xff = att.addr(i)
			a := c.must(t, url)
			switch {
			case a.origin:
				in++
			case a.status == http.StatusTooManyRequests:
				refused++
				if ra, _ := strconv.Atoi(a.header.Get("Retry-After")); ra != 60 {
					t.Errorf("%s: 429 with Retry-After %q, want 60", att.name, a.header.Get("Retry-After"))
				}
				if a.set != nil {
					t.Errorf("%s: a refused visit got a ticket", att.name)
				}
			default:
				t.Errorf("%s: %d %q", att.name, a.status, a.body)
			}
		}
		t.Logf("per-client limit (reject): %d new visits from one %s: %d admitted, %d refused with 429", att.count, att.name, in, refused)
		if in != 5 || refused != att.count-5 {
			t.Errorf("%s: %d admitted, %d refused; want 5 and %d", att.name, in, refused, att.count-5)
		}
	}
	other := newAdvClient("other", rt)
	other.xff = "198.51.100.7"
	other.mustAdmit(t, url, "from another network")
}

// TestE2EAdversaryCookielessFloodNewcomers measures what a client that
// floods a fifo room with new visits (10 a second, no cookies, from one
// address) costs the honest visitors who come when a place is free, with
// and without a per-client limit (5 a minute): two rooms of one (10 s
// sessions, no renewal, 2 s refresh), each filled at the start; the bot
// floods both; 12 s after the rooms are filled, when their sessions have
// ended, an honest visitor arrives at each; the flood goes on 10 s more.
// Every new visit is a waiter until its first check-in is overdue, so
// without the limit the flood's last few seconds of visits stand ahead of
// the newcomer. Asserted: the bot never gets in; with the limit, at most
// one of its places (the limit's 5 a minute, each live for a refresh
// interval) stands ahead of the honest newcomer. Logged: the newcomer's
// place and wait in both rooms.
func TestE2EAdversaryCookielessFloodNewcomers(t *testing.T) {
	advSkip(t)
	t.Parallel()
	noLimit := `  - id: open
    origin: ORIGIN
    routes:
      - path: /open
    total_active_users: 1
    new_users_per_minute: 600
    session_duration: 10s
    disable_session_renewal: true
    refresh_interval: 2s
    json_response_enabled: true
`
	limited := `  - id: lim
    origin: ORIGIN
    routes:
      - path: /lim
    total_active_users: 1
    new_users_per_minute: 600
    session_duration: 10s
    disable_session_renewal: true
    refresh_interval: 2s
    json_response_enabled: true
    client_limit:
      new_visitors_per_minute: 5
`
	n := newAdvNode(t, "", advTrusted, noLimit+limited, "open")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	stop := make(chan struct{})
	type room struct {
		url     string
		bot     func() ([]time.Time, int, []error)
		waited  time.Duration
		arrival advAnswer
	}
	rooms := map[string]*room{}
	// The per-client limit is a sliding minute estimated from whole
	// minutes (limit.Sketch): across a minute's turn the bot's spent
	// budget fades, and a visit it is then allowed, landing when the
	// room's place is free and nobody waits, would get in as any newcomer
	// would. Start early in a minute, so that the 22 s measured stay in it.
	if sec := time.Now().Second(); sec > 30 {
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute + time.Second)))
	}
	for _, id := range []string{"open", "lim"} {
		r := &room{url: n.url("/" + id + "/buy")}
		f := newAdvClient("filler-"+id, rt)
		f.xff = "192.0.2.1"
		f.mustAdmit(t, r.url, "first")
		bot := newAdvClient("bot-"+id, rt)
		bot.xff = "203.0.113.9"
		r.bot, _ = cookieless(bot, r.url, 100*time.Millisecond, stop)
		rooms[id] = r
	}
	// The fillers' sessions end within 11 s.
	start := time.Now()
	time.Sleep(12 * time.Second)
	var wg sync.WaitGroup
	for id, r := range rooms {
		wg.Go(func() {
			c := newAdvClient("honest-"+id, rt)
			c.xff = "198.51.100.7"
			arrived := time.Now()
			a, err := c.get(r.url)
			if err != nil {
				t.Error(err)
				return
			}
			r.arrival = a
			if !a.origin {
				in, _, err := c.waitHonestly(r.url, stop)
				if err != nil || in.IsZero() {
					t.Errorf("room %s: the honest newcomer was not admitted: %v", id, err)
					return
				}
			}
			r.waited = time.Since(arrived)
		})
	}
	wg.Wait()
	time.Sleep(time.Until(start.Add(22 * time.Second)))
	close(stop)
	for id, r := range rooms {
		in, sent, errs := r.bot()
		for _, err := range errs {
			t.Errorf("bot in room %s: %v", id, err)
		}
		t.Logf("room %s: a bot sent %d new visits without cookies and got in %d times; an honest newcomer at a free place: admitted on arrival %v (else at place %d), in after %v",
			id, sent, len(in), r.arrival.origin, r.arrival.position, r.waited.Round(10*time.Millisecond))
		if len(in) != 0 {
			t.Errorf("room %s: the bot got in %d times", id, len(in))
		}
	}
	if a := rooms["lim"].arrival; !a.origin && a.position > 2 {
		t.Errorf("with the per-client limit, the honest newcomer at a free place waited at place %d, behind %d of the bot's places", a.position, a.position-1)
	}
}
