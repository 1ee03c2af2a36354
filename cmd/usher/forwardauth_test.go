package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestForwardAuthListener: forward auth on its private listener trusts its
// peers (no trusted_proxies needed), and the public listener does not
// answer forward auth at all (404).
func TestForwardAuthListener(t *testing.T) {
	origin := httpServer(t)
	fa := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`listen: 127.0.0.1:0
forward_auth:
  listen: %s
store:
  embedded:
    path: %s
rooms:
  - id: sale
    origin: %s
    total_active_users: 1
    new_users_per_minute: 100
`, fa, t.TempDir(), origin))
	pub, _, stop := startMain(t, "serve", "--config", cfg)
	defer stop()
	ask := func(base string) int {
		req, _ := http.NewRequest(http.MethodGet, base+"/__usher/auth", nil)
		req.Header.Set("X-Forwarded-Uri", "/shop")
		req.Header.Set("X-Forwarded-Host", "shop.example")
		req.Header.Set("X-Forwarded-For", "198.51.100.7")
		var resp *http.Response
		var err error
		for range 50 { // the private listener comes up with the public one
			if resp, err = http.DefaultTransport.RoundTrip(req); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := ask("http://" + pub); got != http.StatusNotFound {
		t.Fatalf("forward auth on the public listener: %d, want 404", got)
	}
	if got := ask("http://" + fa); got != http.StatusOK {
		t.Fatalf("forward auth on the private listener: %d, want 200", got)
	}
	if got := ask("http://" + fa); got != http.StatusTooManyRequests {
		t.Fatalf("a second visitor: %d, want 429 (the waiting page)", got)
	}
}
