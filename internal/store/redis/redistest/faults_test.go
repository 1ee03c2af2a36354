package redistest

import (
	"net"
	"runtime"
	"testing"
	"time"
)

// TestPartitionAndHeal checks that a partitioned proxy answers nothing
// and a healed one answers again, on a new connection.
func TestPartitionAndHeal(t *testing.T) {
	s := StartServer(t)
	p := StartProxy(t, s.Addr())
	if reply, err := do(p.Addr(), "PING"); err != nil || reply != "PONG" {
		t.Fatalf("PING through the proxy: %q, %v", reply, err)
	}
	if err := p.Partition(); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := do(p.Addr(), "PING")
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("PING through the partitioned proxy answered (err %v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	// The connection open during the partition is reset, not answered.
	if err := <-got; err == nil {
		t.Error("the connection open during the partition was answered after the heal")
	}
	if reply, err := do(p.Addr(), "PING"); err != nil || reply != "PONG" {
		t.Fatalf("PING through the healed proxy: %q, %v", reply, err)
	}
}

// TestRestartKeepsDataOnlyWhenPersistent checks that a persistent server
// comes back from a kill with what it acknowledged, and a plain one
// empty.
func TestRestartKeepsDataOnlyWhenPersistent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(testing.TB) *Server
		want  string
	}{
		{"persistent", StartPersistentServer, "kept"},
		{"plain", StartServer, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.start(t)
			if reply := s.Do("SET", "k", "kept"); reply != "OK" {
				t.Fatalf("SET: %q", reply)
			}
			s.Stop()
			if err := s.Restart(); err != nil {
				t.Fatal(err)
			}
			if got := s.Do("GET", "k"); got != tc.want {
				t.Errorf("GET after a kill and restart: %q, want %q", got, tc.want)
			}
		})
	}
}

// TestServesSlot reads the slot ranges of CLUSTER NODES lines.
func TestServesSlot(t *testing.T) {
	line := "07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004 myself,master - 0 1426238317239 4 connected 0-5460 7000 9000-9001"
	for slot, want := range map[string]bool{"0": true, "5460": true, "5461": false, "7000": true, "9001": true, "9002": false, "x": false} {
		if got := servesSlot(line, slot); got != want {
			t.Errorf("servesSlot(%s) = %v, want %v", slot, got, want)
		}
	}
	replica := "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 slave 07c37dfeb235213a872192d90877d0cd55635b91 0 1426238316232 1 connected"
	if servesSlot(replica, "0") {
		t.Error("a replica's line serves no slot")
	}
}

// TestKillHoldsThePort: a server killed mid-test keeps its port from
// anyone else (on Linux) while a client that dials it is refused, and
// starts again on it.
func TestKillHoldsThePort(t *testing.T) {
	s := StartServer(t)
	s.Do("SET", "k", "v")
	s.Kill()
	if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatal("a killed server's port accepted a connection")
	}
	if runtime.GOOS == "linux" {
		if ln, err := net.Listen("tcp", s.Addr()); err == nil {
			ln.Close()
			t.Fatal("another listener took a killed server's port")
		}
	}
	s.Start()
	if got := s.Do("PING"); got != "PONG" {
		t.Fatalf("PING after the restart: %q", got)
	}
	s.Stop()
	if ln, err := net.Listen("tcp", s.Addr()); err != nil {
		t.Fatalf("the port of a stopped server is still held: %v", err)
	} else {
		ln.Close()
	}
}
