package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/usherhq/usher/docs/integrations"
	"github.com/usherhq/usher/verify"
)

// The forward-auth end-to-end tests run the real usher binary beside a
// real proxy (nginx, Caddy, HAProxy) started with the recipe's own file
// from docs/integrations/, its placeholders filled in, in front of an
// origin that records the admission token each request brings. They check
// what docs/integrations/ promises, through the proxy: the first visitor
// goes in with a token, the second waits with the page and the cookie and
// goes in by itself when the first one's session ends, apps get JSON,
// bypassed paths reach the origin while the room is full, and the token
// reaches the origin only for admitted visitors, never a client's own.

// proxyRoom is the room every proxy test runs: one visitor at a time, a
// 10 s session that does not grow, check-ins every 2 s, JSON for apps and
// /static/ bypassed. It trusts loopback, where the proxy is.
const proxyRoom = `listen: %s
trusted_proxies: [127.0.0.1/8]
store:
  embedded:
    path: %s
rooms:
  - id: shop
    name: Seal Brewing shop
    origin: %s
    routes:
      - path: /
    total_active_users: 1
    new_users_per_minute: 60
    session_duration: 10s
    disable_session_renewal: true
    refresh_interval: 2s
    json_response_enabled: true
    rules:
      - description: static files
        expression: path.startsWith("/static/")
        action: bypass_waiting_room
`

// proxySession is proxyRoom's session_duration.
const proxySession = 10 * time.Second

// tokenHeader is where usher puts the admission token.
const tokenHeader = "X-Usher-Admission"

// forgedToken is what a client sends in tokenHeader hoping the origin
// takes it.
const forgedToken = "forged.by.client"

// originHit is one request the origin got.
type originHit struct {
	path     string
	token    string
	hasToken bool
	cookie   string // the Cookie headers, joined with "; "
	header   http.Header
	target   string // the request target as sent
}

// recordingOrigin answers every request with a small page naming the path
// and records the token it came with.
type recordingOrigin struct {
	mu   sync.Mutex
	hits []originHit
}

func (o *recordingOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, has := r.Header[tokenHeader]
	h := originHit{path: r.URL.Path, hasToken: has, cookie: strings.Join(r.Header.Values("Cookie"), "; "), header: r.Header.Clone(), target: r.RequestURI}
	if has {
		h.token = strings.Join(tok, ",")
	}
	o.mu.Lock()
	o.hits = append(o.hits, h)
	o.mu.Unlock()
	w.Header().Set("X-From-Origin", "1")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html><title>shop</title><p>origin page %s</p>\n", r.URL.Path)
}

// last returns the last request the origin got for path.
func (o *recordingOrigin) last(path string) (originHit, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := len(o.hits) - 1; i >= 0; i-- {
		if o.hits[i].path == path {
			return o.hits[i], true
		}
	}
	return originHit{}, false
}

// count returns how many requests for path the origin got.
func (o *recordingOrigin) count(path string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, h := range o.hits {
		if h.path == path {
			n++
		}
	}
	return n
}

// proxyRig is usher, the origin and the proxy under test, all on loopback.
type proxyRig struct {
	dir        string
	usherAddr  string
	originAddr string
	origin     *recordingOrigin
	// authAddr is usher's private forward-auth listener
	// (forward_auth.listen), host:port.
	authAddr string
	// proxyURL is the site through the proxy: http://host:port.
	proxyURL string
}

// newProxyRig starts the origin and usher with proxyRoom. The proxy comes
// next (startProxy), on the address rig.proxyURL names.
func newProxyRig(t *testing.T) *proxyRig {
	t.Helper()
	return newProxyRigWith(t, proxyRoom)
}

// newProxyRigWith starts the origin and usher with config, a format with
// %s for usher's address, its store's directory and the origin's URL;
// usher's private forward-auth listener (forward_auth.listen, which the
// recipes ask) is added to it.
func newProxyRigWith(t *testing.T, configFormat string) *proxyRig {
	t.Helper()
	rig := &proxyRig{dir: t.TempDir(), origin: &recordingOrigin{}}
	srv := httptest.NewServer(rig.origin)
	t.Cleanup(srv.Close)
	rig.originAddr = strings.TrimPrefix(srv.URL, "http://")
	rig.usherAddr = freeAddr(t)
	rig.authAddr = freeAddr(t)
	rig.proxyURL = "http://" + freeAddr(t)
	config := filepath.Join(rig.dir, "usher.yaml")
	body := fmt.Sprintf(configFormat, rig.usherAddr, filepath.Join(rig.dir, "data"), srv.URL) +
		fmt.Sprintf("forward_auth:\n  listen: %s\n", rig.authAddr)
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	showOnFailure(t, "usher", config+".log")
	startUsher(t, config, rig.usherAddr, "shop")
	return rig
}

// listenAddr is the proxy's host:port.
func (rig *proxyRig) listenAddr() string { return strings.TrimPrefix(rig.proxyURL, "http://") }

// recipe returns the documented file docs/integrations/name with its
// placeholders filled in: {{LISTEN}} the proxy's address, {{USHER}}
// usher's, {{USHER_AUTH}} usher's private forward-auth listener's,
// {{ORIGIN}} the origin's, each host:port, and {{SITE}} the site's address
// as Caddy takes it (http://host:port: no certificate), {{AUTH_CACHE}}
// nginx's cache directory for usher's answers, in the rig's directory.
func (rig *proxyRig) recipe(t *testing.T, name string) string {
	t.Helper()
	s, err := integrations.Recipe(name, map[string]string{"{{LISTEN}}": rig.listenAddr(), "{{USHER}}": rig.usherAddr,
		"{{USHER_AUTH}}": rig.authAddr, "{{ORIGIN}}": rig.originAddr, "{{SITE}}": rig.proxyURL,
		"{{AUTH_CACHE}}": rig.authCache(t)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// authCache returns a directory for nginx's cache of usher's answers,
// {{AUTH_CACHE}}: one that nginx's workers, which run as another user when
// nginx starts as root, can reach (a test's own directory is not).
func (rig *proxyRig) authCache(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "usher-auth-cache-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "cache")
}

// writeFile writes body to name in the rig's directory and returns its
// path.
func (rig *proxyRig) writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(rig.dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// showOnFailure prints the file at the end of a failed test.
func showOnFailure(t *testing.T, what, path string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		b, _ := os.ReadFile(path)
		if len(b) > 20000 {
			b = b[len(b)-20000:]
		}
		t.Logf("%s log (%s):\n%s", what, path, b)
	})
}

// startProxy runs the proxy's command with its output in logName (shown
// if the test fails), waits until it accepts connections on the rig's
// proxy address, and stops it at the end.
func (rig *proxyRig) startProxy(t *testing.T, logName string, env []string, name string, args ...string) {
	t.Helper()
	logPath := filepath.Join(rig.dir, logName)
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	showOnFailure(t, name, logPath)
	cmd := exec.Command(name, args...)
	cmd.Dir = rig.dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		// SIGTERM: nginx's master stops its workers.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", rig.listenAddr(), time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-done:
			t.Fatalf("%s exited at start", name)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("%s did not listen on %s in 20 s", name, rig.listenAddr())
}

// visitor is a browser or an app with its own cookie jar.
type visitor struct {
	name   string
	client *http.Client
	accept string
}

func newVisitor(t *testing.T, name, accept string) *visitor {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &visitor{name: name, accept: accept, client: &http.Client{
		Jar:     jar,
		Timeout: 10 * time.Second,
		// A waiting room never redirects; a redirect is a failure to see.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// answer is what a visitor got.
type answer struct {
	status int
	header http.Header
	body   string
}

// ticketCookies counts the answer's Set-Cookie headers for the ticket.
func ticketCookies(a answer) int {
	n := 0
	for _, c := range a.header.Values("Set-Cookie") {
		if strings.HasPrefix(c, "__usher_wr") {
			n++
		}
	}
	return n
}

func (a answer) fromOrigin() bool { return a.header.Get("X-From-Origin") == "1" }

func (a answer) String() string {
	return fmt.Sprintf("%d %v %.300q", a.status, a.header, a.body)
}

// get requests path through the proxy, with hdr (name, value pairs).
func (v *visitor) get(t *testing.T, base, path string, hdr ...string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", v.accept)
	req.Header.Set("Accept-Language", "en-US,en;q=0.8")
	req.Header.Set("User-Agent", "usher-e2e/"+v.name)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := v.client.Do(req)
	if err != nil {
		t.Fatalf("%s: GET %s: %v", v.name, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// ticket returns the visitor's ticket cookie for the site, "" if none.
func (v *visitor) ticket(t *testing.T, base string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
	for _, c := range v.client.Jar.Cookies(req.URL) {
		if strings.HasPrefix(c.Name, "__usher_wr") {
			return c.Value
		}
	}
	return ""
}

const (
	wantHTML = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	wantJSON = "application/json"
)

// refreshSeconds reads how long a waiting answer says to wait: the
// Refresh header, else the JSON's refreshIntervalSeconds, else the page's
// meta refresh.
func refreshSeconds(t *testing.T, a answer) int {
	t.Helper()
	if n, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(a.header.Get("Refresh"), ";", 2)[0])); err == nil && n > 0 {
		return n
	}
	var js struct {
		Room struct {
			Refresh int `json:"refreshIntervalSeconds"`
		} `json:"usherWaitingRoom"`
	}
	if json.Unmarshal([]byte(a.body), &js) == nil && js.Room.Refresh > 0 {
		return js.Room.Refresh
	}
	if i := strings.Index(a.body, `http-equiv="refresh" content="`); i >= 0 {
		rest := a.body[i+len(`http-equiv="refresh" content="`):]
		if n, err := strconv.Atoi(rest[:strings.IndexAny(rest, `";`)]); err == nil && n > 0 {
			return n
		}
	}
	t.Fatalf("a waiting answer that says nothing of when to come back: %v", a)
	return 0
}

// checkForwardAuth runs the visits every recipe must pass through a
// running proxy. waitStatus is the status the proxy gives waiting
// visitors: usher's 429 where the proxy passes usher's answer on as it is
// (Caddy, HAProxy), the room's queueing_status_code (200) where nginx
// fetches the page.
func checkForwardAuth(t *testing.T, rig *proxyRig, waitStatus int) {
	t.Helper()
	site := rig.proxyURL
	keys, err := verify.New(verify.Options{JWKSURL: site + "/__usher/jwks.json", Room: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	// checkToken: the origin's last request for path came with a token of
	// usher's for the room (its keys fetched through the proxy); its
	// visitor id.
	checkToken := func(who, path string) string {
		t.Helper()
		hit, ok := rig.origin.last(path)
		if !ok {
			t.Fatalf("%s: the origin never got %s", who, path)
		}
		if !hit.hasToken || hit.token == "" {
			t.Fatalf("%s: the origin got %s without an admission token", who, path)
		}
		c, err := keys.Verify(hit.token)
		if err != nil {
			t.Fatalf("%s: the origin got %s with a token that does not verify: %v (%.60q)", who, path, err, hit.token)
		}
		return c.Subject
	}

	// 1. The first visitor goes in: the origin's page, the ticket
	// cookie, a token for the room.
	first := newVisitor(t, "first", wantHTML)
	a := first.get(t, site, "/beer")
	if a.status != 200 || !a.fromOrigin() {
		t.Fatalf("first visitor: want the origin's page, got %v", a)
	}
	if first.ticket(t, site) == "" || ticketCookies(a) != 1 {
		t.Fatalf("first visitor: admitted with %d ticket cookies, want 1 (Set-Cookie: %q)", ticketCookies(a), a.header.Values("Set-Cookie"))
	}
	sub := checkToken("first visitor", "/beer")

	// Their next request, with a token of their own making: the cookie
	// is known (the same visitor id, no new admission), the origin gets
	// usher's token and never theirs.
	a = first.get(t, site, "/cart", tokenHeader, forgedToken, "Cookie", "site=1", "X-Country", "XX", "X-Real-IP", "6.6.6.6",
		"Forwarded", "for=6.6.6.6;host=evil.example", "X-Forwarded-For", "6.6.6.6", "X-Forwarded-Host", "evil.example")
	if a.status != 200 || !a.fromOrigin() {
		t.Fatalf("first visitor, second request: want the origin's page, got %v", a)
	}
	// usher's cookies are usher's: the origin gets the visitor's others
	// (issue 22).
	hit, _ := rig.origin.last("/cart")
	if strings.Contains(hit.cookie, "__usher_") || !strings.Contains(hit.cookie, "site=1") {
		t.Fatalf("first visitor, second request: the origin got Cookie %q: want site=1 without usher's cookies", hit.cookie)
	}
	// The client's copies of the proxy's headers never reach the origin
	// (issue 21): the proxy sets them or drops them.
	for _, name := range []string{"X-Country", "X-Real-Ip", "Forwarded", "X-Forwarded-For", "X-Forwarded-Host"} {
		if v := strings.Join(hit.header.Values(name), ", "); strings.Contains(v, "6.6.6.6") || strings.Contains(v, "evil.example") || v == "XX" {
			t.Errorf("first visitor, second request: the origin got the client's %s: %q", name, v)
		}
	}
	if again := checkToken("first visitor, second request", "/cart"); again != sub {
		t.Fatalf("first visitor, second request: visitor %s, then %s: the cookie was not kept", sub, again)
	}

	// 2. The second visitor waits: the page, the cookie, never the origin.
	second := newVisitor(t, "second", wantHTML)
	a = second.get(t, site, "/beer/ipa", tokenHeader, forgedToken)
	if a.status != waitStatus || a.fromOrigin() || !strings.Contains(a.body, "<html") || !strings.Contains(a.body, "Seal Brewing shop") {
		t.Fatalf("second visitor: want the waiting page with %d, got %v", waitStatus, a)
	}
	if second.ticket(t, site) == "" || ticketCookies(a) != 1 {
		t.Fatalf("second visitor: waiting with %d ticket cookies, want 1 (Set-Cookie: %q)", ticketCookies(a), a.header.Values("Set-Cookie"))
	}
	if refreshSeconds(t, a) <= 0 || a.header.Get("Refresh") == "" {
		t.Errorf("second visitor: the waiting page came without its Refresh header: %v", a.header)
	}
	if n := rig.origin.count("/beer/ipa"); n != 0 {
		t.Fatalf("second visitor: the origin got %d requests from a waiting visitor", n)
	}
	if cc := a.header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
		t.Errorf("second visitor: the waiting page may be cached: Cache-Control %q", cc)
	}

	// A visitor who describes another request in the headers a proxy
	// uses to describe the original one (a bypassed path, another method
	// or host) is asked about as what it is, and waits.
	liar := newVisitor(t, "liar", wantHTML)
	a = liar.get(t, site, "/beer/lager",
		"X-Forwarded-Uri", "/static/x.css", "X-Original-URI", "/static/x.css", "X-Original-Url", "/static/x.css",
		"X-Forwarded-Method", "OPTIONS", "X-Original-Method", "OPTIONS",
		"X-Forwarded-Host", "static.example", "X-Original-Host", "static.example", "X-Forwarded-For", "10.1.2.3")
	if a.fromOrigin() || rig.origin.count("/beer/lager") != 0 || a.status != waitStatus {
		t.Fatalf("a visitor sending the forwarded headers of a bypassed path: want the waiting page with %d, got %v", waitStatus, a)
	}

	// 3. An app gets usher's JSON, and its cookie.
	app := newVisitor(t, "app", wantJSON)
	a = app.get(t, site, "/api/stock")
	var js struct {
		Room struct {
			In       bool `json:"inWaitingRoom"`
			Refresh  int  `json:"refreshIntervalSeconds"`
			Position int  `json:"position"`
		} `json:"usherWaitingRoom"`
	}
	if err := json.Unmarshal([]byte(a.body), &js); err != nil || a.status != waitStatus || !js.Room.In || js.Room.Refresh <= 0 ||
		!strings.HasPrefix(a.header.Get("Content-Type"), "application/json") {
		t.Fatalf("app: want usher's JSON with %d, got %v", waitStatus, a)
	}
	if app.ticket(t, site) == "" {
		t.Fatal("app: waiting without a ticket cookie")
	}

	// 4. A bypassed path reaches the origin while the room is full, with
	// no cookie and no token, not even the client's own.
	bot := newVisitor(t, "bot", "*/*")
	a = bot.get(t, site, "/static/app.css", tokenHeader, forgedToken)
	if a.status != 200 || !a.fromOrigin() {
		t.Fatalf("bypassed path: want the origin's answer, got %v", a)
	}
	if hit, _ := rig.origin.last("/static/app.css"); hit.hasToken {
		t.Fatalf("bypassed path: the origin got a token (%q): bypassed requests carry none, and never the client's", hit.token)
	}
	if bot.ticket(t, site) != "" {
		t.Fatal("bypassed path: a ticket cookie was set")
	}

	// usher's own paths go to usher: the room's status (kept a second)
	// counts the first visitor inside and the waiters.
	for try := 0; ; try++ {
		a = bot.get(t, site, "/__usher/status/shop")
		var st struct{ Active, Waiting int }
		err := json.Unmarshal([]byte(a.body), &st)
		if err == nil && a.status == 200 && st.Active == 1 && st.Waiting >= 1 {
			break
		}
		if try == 20 {
			t.Fatalf("/__usher/status/shop through the proxy: %v", a)
		}
		time.Sleep(250 * time.Millisecond)
	}
	// The questions are not for visitors: the proxy asks them itself.
	if a = bot.get(t, site, "/__usher/auth", "X-Forwarded-Uri", "/beer", "X-Original-URI", "/beer"); a.status == 200 || a.header.Get(tokenHeader) != "" {
		t.Fatalf("/__usher/auth asked through the proxy by a visitor: %v", a)
	}

	// 5. The second visitor goes in by itself once the first one's
	// session ends, following the page's refresh.
	start := time.Now()
	deadline := start.Add(proxySession + 20*time.Second)
	a = second.get(t, site, "/beer/ipa")
	for !a.fromOrigin() {
		if a.status != waitStatus {
			t.Fatalf("second visitor, waiting: %v", a)
		}
		if time.Now().After(deadline) {
			t.Fatalf("second visitor: still waiting %v after the first one's session (%v) should have ended", time.Since(start), proxySession)
		}
		time.Sleep(time.Duration(refreshSeconds(t, a)) * time.Second)
		a = second.get(t, site, "/beer/ipa")
	}
	t.Logf("second visitor admitted %v after the first one's second request", time.Since(start).Round(100*time.Millisecond))
	if sub2 := checkToken("second visitor", "/beer/ipa"); sub2 == sub {
		t.Fatal("second visitor: admitted with the first one's visitor id")
	}
	a = second.get(t, site, "/beer/stout")
	if !a.fromOrigin() {
		t.Fatalf("second visitor, once admitted: %v", a)
	}
	checkToken("second visitor, once admitted", "/beer/stout")
}
