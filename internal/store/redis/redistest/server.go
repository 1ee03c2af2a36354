// Package redistest starts real redis-server processes for tests: one
// server on a free loopback port, a small Redis Cluster (with or without
// replicas), or a primary with a replica and three sentinels, and puts
// faults between them and their clients (Proxy: toxiproxy's proxy as a
// library). Servers keep nothing on disk (--save ” --appendonly no)
// unless started with StartPersistentServer, live in the test's temp
// directory and are killed when the test ends (and, on Linux, when the
// test binary dies).
package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is one redis-server process.
type Server struct {
	t     testing.TB
	bin   string
	dir   string
	port  int
	extra []string
	conf  string // a sentinel's config file (it rewrites it); empty: a server

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	// release frees the port Kill holds while the server is down.
	release func()
}

// StartServer starts a redis-server on a free loopback port and stops it
// when the test ends.
func StartServer(t testing.TB) *Server {
	t.Helper()
	return startServer(t, nil)
}

func startServer(t testing.TB, extra func(port int) []string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server not found: install it (make test installs it as root)")
	}
	var last error
	for range 5 {
		s := &Server{t: t, bin: bin, dir: t.TempDir(), port: freePort(t)}
		if extra != nil {
			s.extra = extra(s.port)
		}
		if last = s.start(); last == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatalf("redistest: %v", last)
	return nil
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Start starts the server again, on the same port, with no data (one of
// StartPersistentServer: with what its append-only file holds). It fails
// the test when the server does not answer.
func (s *Server) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatalf("redistest: %v", err)
	}
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("server already running")
	}
	if s.release != nil {
		s.release()
		s.release = nil
	}
	logPath := filepath.Join(s.dir, "redis.log")
	var args []string
	if s.conf != "" {
		args = []string{s.conf, "--sentinel"}
	}
	args = append(args, []string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--save", "", "--appendonly", "no",
		"--logfile", logPath,
	}...)
	args = append(args, s.extra...)
	cmd := exec.Command(s.bin, args...)
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if reply, err := do(s.Addr(), "PING"); err == nil && reply == "PONG" {
			break
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("redis-server on port %d exited: %s", s.port, lastLines(string(log), 5))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("redis-server on port %d does not answer", s.port)
		}
	}
	s.cmd, s.exited = cmd, exited
	return nil
}

// Stop kills the server (as a crash would) and waits for it to exit,
// leaving its port free. Stop on a stopped server frees the port if Kill
// held it.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
	if s.release != nil {
		s.release()
		s.release = nil
	}
}

// Kill kills the server (SIGKILL, as a crash would) and waits for it to
// exit, and holds its port until Start (or Stop) while it is down: a
// client that dials it is refused, and no server another test starts
// meanwhile can take the port. (One did: a redis-server of a parallel
// test on a killed primary's port was made a replica by that test's
// sentinels, or this test's sentinels made it theirs, and one of the two
// lost its data.) Use Kill for a server killed mid-test and started
// again; Stop is for the end.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
	if s.release == nil {
		if release, err := holdPort(s.port); err == nil {
			s.release = release
		}
	}
}

func (s *Server) killLocked() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd, s.exited = nil, nil
}

// Do sends one command and returns its reply as text: a simple or bulk
// string as it is, an integer in decimal, nil as "", an error as
// "(error) message", an array as its elements one per line. It fails the
// test when the server cannot be reached.
func (s *Server) Do(args ...string) string {
	s.t.Helper()
	reply, err := do(s.Addr(), args...)
	if err != nil {
		s.t.Fatalf("redistest: %s: %v", strings.Join(args, " "), err)
	}
	return reply
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// running reports whether the server's process is running (started and
// not stopped).
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Restart starts the stopped server again on its port, as a supervisor
// would after a crash: with no data, or, for StartPersistentServer's, with
// what its append-only file holds. It returns its error rather than
// failing the test, for use off the test's goroutine.
func (s *Server) Restart() error { return s.start() }
