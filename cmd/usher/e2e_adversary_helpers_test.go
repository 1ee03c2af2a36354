package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/ticket"
)

// The adversary suite (e2e_adversary*_test.go) plays hostile clients
// against the real binary, in real time, over real HTTP, and measures what
// each gains. The helpers here start a node with a known key ring (so that
// the tests can open the tickets they are given and count admissions
// exactly), an origin that counts what reaches it, clients that handle
// their cookies by hand (to copy, replay or drop them), and readers of the
// admin API, the metrics and the process's memory.

// advCookie is the name of the ticket cookie of rooms without a suffix.
const advCookie = "__usher_wr"

// advToken is the admin token of every adversary node.
const advToken = "adv-token"

// advOriginHeader marks every answer of the counting origin.
const advOriginHeader = "X-Adv-Origin"

// advClientHeader names the client a request comes from, for the origin's
// records.
const advClientHeader = "X-Adv-Client"

// advHit is one request the origin received.
type advHit struct {
	At     time.Time
	Client string // advClientHeader
	Host   string
	URI    string // the request target as received
}

// advOrigin is an origin that records every request it receives.
type advOrigin struct {
	URL string
	mu  sync.Mutex
	log []advHit
}

func newAdvOrigin(t *testing.T) *advOrigin {
	t.Helper()
	o := &advOrigin{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.log = append(o.log, advHit{At: time.Now(), Client: r.Header.Get(advClientHeader), Host: r.Host, URI: r.RequestURI})
		o.mu.Unlock()
		w.Header().Set(advOriginHeader, "1")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "inside\n")
	}))
	t.Cleanup(srv.Close)
	o.URL = srv.URL
	return o
}

// hits returns the requests received so far that match keep (all when nil).
func (o *advOrigin) hits(keep func(advHit) bool) []advHit {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []advHit
	for _, h := range o.log {
		if keep == nil || keep(h) {
			out = append(out, h)
		}
	}
	return out
}

// advNode is one usher process with a key ring the test knows, an admin
// listener, and a config file it may rewrite (watch_config is on).
type advNode struct {
	t      *testing.T
	config string
	addr   string
	admin  string
	store  string // the store block
	top    string // extra top-level config
	rooms  string // the rooms block
	key    usher.Key
	ring   *ticket.Ring
	p      *proc
	room   string // the room startUsher waits for
	origin *advOrigin
}

// advEmbedded is the store block of an embedded store in dir.
func advEmbedded(dir string) string {
	return fmt.Sprintf("store:\n  embedded:\n    path: %s\n", filepath.Join(dir, "data"))
}

// advRedis is the store block of a Redis store.
func advRedis(addr, failMode string) string {
	return fmt.Sprintf("store:\n  redis:\n    addrs: [%s]\n    fail_mode: %s\n    timeout: 300ms\n", addr, failMode)
}

// newAdvNode writes a config with store (nil: embedded in a temp
// directory), top (extra top-level fields) and rooms, and starts the
// binary on it; room is a room id to wait for. The rooms' origins may use
// the placeholder ORIGIN, replaced by the counting origin's URL.
func newAdvNode(t *testing.T, store, top, rooms, room string) *advNode {
	t.Helper()
	key, err := ticket.GenerateKey("adv1")
	if err != nil {
		t.Fatal(err)
	}
	return startAdvNode(t, key, newAdvOrigin(t), store, top, rooms, room)
}

// startAdvNode is newAdvNode with a given key and origin, for nodes that
// share them.
func startAdvNode(t *testing.T, key usher.Key, origin *advOrigin, store, top, rooms, room string) *advNode {
	t.Helper()
	dir := t.TempDir()
	if store == "" {
		store = advEmbedded(dir)
	}
	ring, err := ticket.NewRing([]usher.Key{key})
	if err != nil {
		t.Fatal(err)
	}
	n := &advNode{
		t: t, config: filepath.Join(dir, "usher.yaml"), addr: freeAddr(t), admin: freeAddr(t),
		store: store, top: top, rooms: rooms, key: key, ring: ring, room: room, origin: origin,
	}
	n.write(t)
	n.p = startUsher(t, n.config, n.addr, room)
	return n
}

// restart kills the node (SIGKILL) and starts it again on the same config
// and addresses.
func (n *advNode) restart(t *testing.T) {
	t.Helper()
	n.p.kill()
	n.p = startUsher(t, n.config, n.addr, n.room)
}

// body is the node's config file.
func (n *advNode) body() string {
	rooms := strings.ReplaceAll(n.rooms, "ORIGIN", n.origin.URL)
	top := strings.ReplaceAll(n.top, "ORIGIN", n.origin.URL)
	return fmt.Sprintf("listen: %s\nadmin:\n  listen: %s\n  token: %s\nwatch_config: true\nkeys:\n  - id: %s\n    secret: %s\n%s%srooms:\n%s",
		n.addr, n.admin, advToken, n.key.ID, ticket.EncodeSecret(n.key.Secret), n.store, top, rooms)
}

// write replaces the config file in one step.
func (n *advNode) write(t *testing.T) {
	t.Helper()
	tmp := n.config + ".tmp"
	if err := os.WriteFile(tmp, []byte(n.body()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, n.config); err != nil {
		t.Fatal(err)
	}
}

// log returns the node's log so far.
func (n *advNode) log() string {
	b, _ := os.ReadFile(n.config + ".log")
	return string(b)
}

// reload rewrites the config with top and rooms and waits until the node
// logs that it reloaded it (the file is watched every second).
func (n *advNode) reload(t *testing.T, top, rooms string) {
	t.Helper()
	before := strings.Count(n.log(), "config reloaded")
	refused := strings.Count(n.log(), "config reload refused")
	n.top, n.rooms = top, rooms
	n.write(t)
	deadline := time.Now().Add(15 * time.Second)
	for {
		log := n.log()
		if strings.Count(log, "config reloaded") > before {
			return
		}
		if strings.Count(log, "config reload refused") > refused {
			t.Fatalf("the reload was refused:\n%s", log)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reload 15 s after the config changed:\n%s", log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// url returns the public URL of path.
func (n *advNode) url(path string) string { return "http://" + n.addr + path }

// pid is the process id of the running binary.
func (n *advNode) pid() int { return n.p.cmd.Process.Pid }

// open opens a ticket cookie of room.
func (n *advNode) open(room string, c *http.Cookie) (usher.Ticket, error) {
	return n.ring.Open(c.Value, room, c.Name)
}

// advStatus is the admin API's room status.
type advStatus struct {
	Active             int64 `json:"active"`
	Waiting            int64 `json:"waiting"`
	AdmittedLastMinute int64 `json:"admitted_last_minute"`
	Slots              int64 `json:"slots"`
	TotalActiveUsers   int   `json:"total_active_users"`
}

// status reads a room's live counters from the admin API.
func (n *advNode) status(room string) (advStatus, error) {
	var st advStatus
	body, err := n.adminGet("/v1/rooms/" + room + "/status")
	if err != nil {
		return st, err
	}
	err = json.Unmarshal([]byte(body), &st)
	return st, err
}

func (n *advNode) adminGet(path string) (string, error) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+n.admin+path, nil)
	req.Header.Set("Authorization", "Bearer "+advToken)
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("admin %s: %d %s", path, resp.StatusCode, b)
	}
	return string(b), err
}

// metric returns the sum of the samples of a metric (every label set) on
// the admin listener's /metrics.
func (n *advNode) metric(t *testing.T, name string) float64 {
	t.Helper()
	body, err := n.adminGet("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	sum, found := 0.0, false
	for line := range strings.SplitSeq(body, "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		metric, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if base, _, _ := strings.Cut(metric, "{"); base != name {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			t.Fatalf("metric %s: %q", name, line)
		}
		sum, found = sum+v, true
	}
	if !found {
		t.Fatalf("metric %s not found in /metrics", name)
	}
	return sum
}

// rssKB reads the resident set size of process pid, in KB.
func rssKB(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no VmRSS in /proc/pid/status")
	return 0
}

// advTransport is a transport for many requests from the test, without
// proxies.
func advTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     30 * time.Second,
	}
}

// advClient is a client that handles its ticket cookie by hand. Follow
// makes it keep the ticket of every answer (a browser); otherwise it keeps
// sending the cookie it has.
type advClient struct {
	name   string
	xff    string // X-Forwarded-For, when the node trusts loopback
	ua     string
	follow bool
	hc     *http.Client

	mu     sync.Mutex
	cookie *http.Cookie
}

func newAdvClient(name string, rt http.RoundTripper) *advClient {
	return &advClient{name: name, ua: "adv/1", follow: true, hc: &http.Client{
		Transport:     rt,
		Timeout:       20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// ticket returns the cookie the client holds (nil: none).
func (c *advClient) ticket() *http.Cookie {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cookie
}

func (c *advClient) setTicket(ck *http.Cookie) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cookie = ck
}

// advAnswer is what one request got.
type advAnswer struct {
	status     int
	origin     bool // the origin answered
	waiting    bool // a JSON waiting answer
	prequeue   bool
	position   int64
	refresh    time.Duration
	set        *http.Cookie // the ticket cookie the answer set
	header     http.Header
	body       string
	sent, recv time.Time
}

// get sends a GET with the client's ticket and updates it when the client
// follows its cookies.
func (c *advClient) get(url string) (advAnswer, error) {
	a, err := c.send(url, c.ticket())
	if err == nil && a.set != nil && c.follow {
		c.setTicket(a.set)
	}
	return a, err
}

// send sends a GET with cookie ck (none when nil), changing nothing in c.
func (c *advClient) send(url string, ck *http.Cookie) (advAnswer, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return advAnswer{}, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.ua)
	req.Header.Set(advClientHeader, c.name)
	if c.xff != "" {
		req.Header.Set("X-Forwarded-For", c.xff)
	}
	if ck != nil {
		req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
	}
	a := advAnswer{sent: time.Now()}
	resp, err := c.hc.Do(req)
	if err != nil {
		return a, fmt.Errorf("%s: %w", c.name, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	a.recv = time.Now()
	if err != nil {
		return a, fmt.Errorf("%s: %w", c.name, err)
	}
	return readAdvAnswer(a, resp, body), nil
}

func readAdvAnswer(a advAnswer, resp *http.Response, body []byte) advAnswer {
	a.status, a.header, a.body = resp.StatusCode, resp.Header, string(body)
	a.origin = resp.Header.Get(advOriginHeader) == "1"
	for _, ck := range resp.Cookies() {
		if strings.HasPrefix(ck.Name, advCookie) {
			a.set = ck
		}
	}
	if strings.Contains(resp.Header.Get("Content-Type"), "json") {
		var doc struct {
			W *struct {
				Position   int64 `json:"position"`
				Refresh    int   `json:"refreshIntervalSeconds"`
				Prequeuing bool  `json:"isEventPrequeueing"`
			} `json:"usherWaitingRoom"`
		}
		if json.Unmarshal(body, &doc) == nil && doc.W != nil {
			a.waiting, a.position, a.prequeue = true, doc.W.Position, doc.W.Prequeuing
			a.refresh = time.Duration(doc.W.Refresh) * time.Second
		}
	}
	return a
}

// must is get that fails the test on a transport error.
func (c *advClient) must(t *testing.T, url string) advAnswer {
	t.Helper()
	a, err := c.get(url)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// mustAdmit asserts that the client reaches the origin.
func (c *advClient) mustAdmit(t *testing.T, url, when string) advAnswer {
	t.Helper()
	a := c.must(t, url)
	if !a.origin {
		t.Fatalf("%s %s: %d waiting=%v position=%d %q, want the origin", c.name, when, a.status, a.waiting, a.position, a.body)
	}
	return a
}

// mustWait asserts that the client gets a JSON waiting answer.
func (c *advClient) mustWait(t *testing.T, url, when string) advAnswer {
	t.Helper()
	a := c.must(t, url)
	if !a.waiting || a.origin {
		t.Fatalf("%s %s: %d origin=%v %q, want a waiting answer", c.name, when, a.status, a.origin, a.body)
	}
	return a
}

// rawRequest writes request on a new connection to addr and reads one
// response; it returns the status, or an error when none came.
func rawRequest(addr, request string) (int, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		return 0, err
	}
	method, _, _ := strings.Cut(request, " ")
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// advSkip skips the adversary tests in -short runs.
func advSkip(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end adversary test: runs in real time")
	}
}

// nextSecond sleeps until 100 ms into the next whole second, so that the
// next arrival is in an arrival bucket of its own.
func nextSecond() {
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 100*time.Millisecond)))
}

// waitHonestly checks in as a browser does, keeping its cookies and coming
// back when told, until the origin answers (the time that answer came
// back), until stop, or until three requests in a row fail. lastWait is
// when it sent the last request that was told to wait.
func (c *advClient) waitHonestly(url string, stop <-chan struct{}) (in, lastWait time.Time, err error) {
	errs := 0
	for {
		a, err := c.get(url)
		switch {
		case err != nil:
			if errs++; errs >= 3 {
				return time.Time{}, lastWait, err
			}
		case a.origin:
			return a.recv, lastWait, nil
		case a.waiting:
			errs = 0
			lastWait = a.sent
			select {
			case <-stop:
				return time.Time{}, lastWait, nil
			case <-time.After(a.refresh):
			}
			continue
		default:
			return time.Time{}, lastWait, fmt.Errorf("%s: %d %q, want the origin or a waiting answer", c.name, a.status, a.body)
		}
		select {
		case <-stop:
			return time.Time{}, lastWait, nil
		case <-time.After(time.Second):
		}
	}
}

// activeWatch is a poll of a room's counters every 250 ms.
type activeWatch struct {
	done chan struct{}

	mu      sync.Mutex
	peak    int64
	sum     int64
	samples int
	fails   int
	waitSum int64 // active counts summed over the samples with waiters
	waitN   int
}

// watchActive polls a room's status every 250 ms until stop.
func (n *advNode) watchActive(room string, stop <-chan struct{}) *activeWatch {
	w := &activeWatch{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			st, err := n.status(room)
			w.mu.Lock()
			if err != nil {
				w.fails++
			} else {
				w.peak = max(w.peak, st.Active)
				w.sum += st.Active
				w.samples++
				if st.Waiting > 0 {
					w.waitSum += st.Active
					w.waitN++
				}
			}
			w.mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return w
}

// result waits for the poll to stop and returns the highest active count
// and how many polls failed.
func (w *activeWatch) result() (peak int64, fails int) {
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak, w.fails
}

// meanWhileWaiting is the mean active count over the polls that saw
// waiters.
func (w *activeWatch) meanWhileWaiting() float64 {
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waitN == 0 {
		return 0
	}
	return float64(w.waitSum) / float64(w.waitN)
}
