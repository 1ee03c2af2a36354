package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/server"
)

// TestServeEndsLiveStreams: a dashboard's live stream open on the admin
// listener ends when usher stops; it does not hold the shutdown until
// server.ShutdownTimeout.
func TestServeEndsLiveStreams(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, fmt.Sprintf(adminServeConfig, filepath.Join(dir, "data"), httpServer(t)))
	_, adm, stop := startMain(t, "serve", "--config", path)
	req, _ := http.NewRequest("GET", "http://"+adm+"/api/v1/live", nil)
	req.Header.Set("Authorization", "Bearer read-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "event: snapshot") {
			break
		}
	}
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, br); ended <- err }()
	start := time.Now()
	if code := stop(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	took := time.Since(start)
	if took >= server.ShutdownTimeout/2 {
		t.Fatalf("usher took %v to stop with a live stream open (shutdown timeout %v)", took, server.ShutdownTimeout)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream is still open after usher stopped")
	}
	t.Logf("stopped in %v with a live stream open", took.Round(time.Millisecond))
}
