package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestQueueAllOffFollowsFile: "usher room queue-all ROOM off" after "on"
// drops the runtime value instead of pinning the file's, so that a later
// change of the file applies on reload. It once set queue_all false at
// runtime: the file's queue_all: true was then silently ignored.
func TestQueueAllOffFollowsFile(t *testing.T) {
	dir := t.TempDir()
	body := fmt.Sprintf(adminServeConfig, filepath.Join(dir, "data"), httpServer(t))
	path := writeConfig(t, body)
	var logs lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan [2]string, 1)
	m := &Main{Stdout: &logs, Stderr: &logs, Ready: func(p, a string) { ready <- [2]string{p, a} }}
	done := make(chan int, 1)
	go func() { done <- m.Run(ctx, []string{"serve", "--config", path}) }()
	defer func() { cancel(); <-done }()
	var pub, adm string
	select {
	case a := <-ready:
		pub, adm = a[0], a[1]
	case <-time.After(20 * time.Second):
		t.Fatal("not listening")
	}
	out := mustCLI(t, adm, "room", "queue-all", "sale", "on")
	if !strings.Contains(out, "sale: queue_all false → true (set at runtime)") {
		t.Errorf("queue-all on:\n%s", out)
	}
	out = mustCLI(t, adm, "room", "queue-all", "sale", "off")
	if !strings.Contains(out, "sale: queue_all true → false (the config file's value)") {
		t.Errorf("queue-all off:\n%s", out)
	}
	if out := mustCLI(t, adm, "room", "get", "sale"); strings.Contains(out, "* since") {
		t.Errorf("a runtime value is left after queue-all off:\n%s", out)
	}
	if visitorWaits(t, pub) {
		t.Fatal("a first visitor waits after queue-all off")
	}

	// The file turns queue_all on: the reload applies it.
	reloads := strings.Count(logs.String(), "config reloaded")
	withQueueAll := strings.Replace(body, "    json_response_enabled: true\n", "    json_response_enabled: true\n    queue_all: true\n", 1)
	if err := os.WriteFile(path, []byte(withQueueAll), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); strings.Count(logs.String(), "config reloaded") == reloads; {
		if time.Now().After(deadline) {
			t.Fatalf("no reload after 10 s:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !visitorWaits(t, pub) {
		t.Errorf("the file's queue_all: true is not in force after the reload:\n%s", mustCLI(t, adm, "room", "get", "sale"))
	}
	// With the file on, "off" is a runtime value (the file says on), and
	// "on" drops it again.
	if out := mustCLI(t, adm, "room", "queue-all", "sale", "off"); !strings.Contains(out, "true → false (set at runtime)") {
		t.Errorf("queue-all off over a file that says on:\n%s", out)
	}
	if out := mustCLI(t, adm, "room", "queue-all", "sale", "on"); !strings.Contains(out, "false → true (the config file's value)") {
		t.Errorf("queue-all on over a file that says on:\n%s", out)
	}
}
