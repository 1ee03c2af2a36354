package main

import (
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
)

// TestInviteLinks: usher invite new asks the running usher for a link; the
// link lets in as many visitors as it has uses, each past a full room, and
// no more; bad flags are refused by name.
func TestInviteLinks(t *testing.T) {
	dir := t.TempDir()
	origin := httpServer(t)
	cfg := writeConfig(t, fmt.Sprintf(`listen: 127.0.0.1:0
admin:
  listen: 127.0.0.1:0
  token: secret
store:
  embedded:
    path: %s
rooms:
  - id: sale
    origin: %s
    total_active_users: 1
    new_users_per_minute: 100
    refresh_interval: 5s
`, dir, origin))
	pub, adm, stop := startMain(t, "serve", "--config", cfg)
	defer stop()
	get := func(c *http.Client, url string) (*http.Response, string) {
		t.Helper()
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 512)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return resp, b.String()
	}
	newClient := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Jar: jar}
	}
	if _, body := get(newClient(), "http://"+pub+"/"); body != "ok" {
		t.Fatal("the first visitor did not fill the room")
	}
	code, out, errs := runMain(t, "invite", "new", "--room", "sale", "--uses", "2", "--expires", "1h", "--admit",
		"--admin", adm, "--token", "secret", "--url", "http://"+pub)
	if code != 0 {
		t.Fatalf("invite new: exit %d: %s", code, errs)
	}
	link := strings.TrimSpace(out)
	if !strings.HasPrefix(link, "http://"+pub+"/__usher/invite/") {
		t.Fatalf("invite new printed %q", link)
	}
	for i := range 2 {
		c := newClient()
		if _, body := get(c, link+"?next=/shop"); body != "ok" {
			t.Fatalf("use %d of the invite: %q, want the origin past the full room", i+1, body)
		}
		if _, body := get(c, "http://"+pub+"/more"); body != "ok" {
			t.Fatalf("use %d: the invited visitor's next request: %q, want its session kept", i+1, body)
		}
	}
	resp, _ := get(newClient(), link)
	if resp.StatusCode != http.StatusGone {
		t.Fatalf("a third use of a link for two: %d, want 410", resp.StatusCode)
	}
	forged := link[:len(link)-3] + "AAA"
	if resp, _ := get(newClient(), forged); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a forged link: %d, want 400", resp.StatusCode)
	}
	for _, args := range [][]string{
		{"invite", "new", "--uses", "2", "--expires", "1h", "--admit"},
		{"invite", "new", "--room", "sale", "--expires", "1h"},
		{"invite", "new", "--room", "sale", "--expires", "1h", "--admit", "--front"},
	} {
		code, _, errs := runMain(t, append(args, "--admin", adm, "--token", "secret")...)
		if code != 2 || !strings.Contains(errs, "--") {
			t.Errorf("%v: exit %d, %q; want 2 naming the flag", args, code, errs)
		}
	}
	code, _, errs = runMain(t, "invite", "new", "--room", "nope", "--expires", "1h", "--front", "--admin", adm, "--token", "secret")
	if code != 1 || !strings.Contains(errs, `no room "nope"`) {
		t.Errorf("an unknown room: exit %d, %q", code, errs)
	}
	code, _, errs = runMain(t, "invite", "new", "--room", "sale", "--expires", "yesterday", "--front", "--admin", adm, "--token", "secret")
	if code != 1 || !strings.Contains(errs, "expires") {
		t.Errorf("a bad expiry: exit %d, %q", code, errs)
	}
}
