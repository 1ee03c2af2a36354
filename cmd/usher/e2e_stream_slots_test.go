package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/internal/bench"
)

// TestE2EStreamSlots (attack 11 of issue 21): a read token that opens
// live and event streams on the real binary until it is refused gets its
// share (16 of each), then 429 naming the limit; the write token's
// dashboard then still opens its live and event streams. Before the
// shares, the read token took all 64 of each and the write token got 503
// on both.
func TestE2EStreamSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	origin := httptest.NewServer(bench.NewOrigin("slots shop"))
	t.Cleanup(origin.Close)
	rc := newReceiver(t, 0)
	dir := t.TempDir()
	pub, adm := freeAddr(t), freeAddr(t)
	path := filepath.Join(dir, "usher.yaml")
	body := fmt.Sprintf(webhookE2EConfig, pub, adm, filepath.Join(dir, "data"), origin.URL, rc.srv.URL+"/hooks/usher", webhookE2ESecret)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	startUsher(t, path, pub, "sale")

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: -1}}
	t.Cleanup(client.CloseIdleConnections)
	var open []io.Closer
	t.Cleanup(func() {
		for _, c := range open {
			c.Close()
		}
	})
	// stream opens a stream and keeps it open; it returns the status
	// and, when refused, the body.
	stream := func(p, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+adm+p, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", p, err)
		}
		if resp.StatusCode == http.StatusOK {
			open = append(open, resp.Body)
			return resp.StatusCode, ""
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	for _, p := range []string{"/api/v1/live", "/api/v1/stream"} {
		n := 0
		code, refusal := 0, ""
		for n < 100 {
			if code, refusal = stream(p, "e2e-read"); code != http.StatusOK {
				break
			}
			n++
		}
		t.Logf("%s: the read token opened %d streams, then %d %s", p, n, code, strings.TrimSpace(refusal))
		if n != 16 || code != http.StatusTooManyRequests || !strings.Contains(refusal, `holds 16`) || !strings.Contains(refusal, "the most one token may (16 per token)") {
			t.Errorf("%s: the read token opened %d streams, then %d %s; want 16, then 429 naming the share", p, n, code, refusal)
		}
		if code, refusal := stream(p, "e2e-write"); code != http.StatusOK {
			t.Errorf("%s: the write token's dashboard stream after the read token's: %d %s", p, code, refusal)
		}
	}
}
