package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemoFirstScreen: the demo's first screen has no warning about its
// own room, and the admin API example it prints works as printed (it once
// gave /v1/..., which answers 404: the API is under /api/v1).
func TestDemoFirstScreen(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errs lockedBuffer
	ready := make(chan struct{})
	m := &Main{Stdout: &out, Stderr: &errs, Ready: func(string, string) { close(ready) }}
	done := make(chan int, 1)
	go func() { done <- m.Run(ctx, []string{"demo", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"}) }()
	select {
	case <-ready:
	case code := <-done:
		t.Fatalf("demo exited %d:\n%s", code, errs.String())
	case <-time.After(20 * time.Second):
		t.Fatal("demo not up after 20 s")
	}
	defer func() {
		cancel()
		<-done
	}()
	// The admin listener's log line comes just after Ready.
	time.Sleep(200 * time.Millisecond)
	if strings.Contains(errs.String(), "level=WARN") {
		t.Errorf("the demo warns on its first screen:\n%s", errs.String())
	}
	example := regexp.MustCompile(`curl -H 'Authorization: Bearer demo' (\S+/rooms/shop/status)`).FindStringSubmatch(out.String())
	if example == nil {
		t.Fatalf("no admin API example in the banner:\n%s", out.String())
	}
	req, _ := http.NewRequest(http.MethodGet, example[1], nil)
	req.Header.Set("Authorization", "Bearer demo")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"shop"`) {
		t.Errorf("the banner's example %s: %d %s", example[1], resp.StatusCode, body)
	}
}
