package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/bench"
)

// The end-to-end tests build the real binary, start it with a config file,
// and drive it over HTTP with virtual visitors who have their own cookie
// jars, in real time.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// usherBinary builds cmd/usher once per test run.
func usherBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "usher-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "usher")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// freeAddr returns a loopback address with a port nobody listens on now.
// givenPorts are the ports freeAddr has handed out in this test process:
// never twice, so that two tests running at once cannot be given the same
// one between its check and its bind.
var givenPorts struct {
	sync.Mutex
	m map[int]bool
}

func freeAddr(t *testing.T) string {
	t.Helper()
	// A port below the kernel's ephemeral range (32768 and up on Linux):
	// a port that ":0" gave and this function let go is one the kernel
	// hands out again, to the next outgoing connection of any test, before
	// the usher it was meant for binds it ("address already in use").
	givenPorts.Lock()
	defer givenPorts.Unlock()
	if givenPorts.m == nil {
		givenPorts.m = make(map[int]bool)
	}
	for range 256 {
		port := 10000 + rand.IntN(22000)
		if givenPorts.m[port] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		givenPorts.m[port] = true
		return ln.Addr().String()
	}
	t.Fatal("no free port below the ephemeral range")
	return ""
}

// proc is a running usher process.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startUsher starts the binary with the config and waits until the room
// answers its status.
func startUsher(t *testing.T, config, addr, room string) *proc {
	t.Helper()
	cmd := exec.Command(usherBinary(t), "serve", "--config", config)
	logf, err := os.OpenFile(config+".log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); logf.Close(); close(p.done) }()
	t.Cleanup(func() { p.kill() })
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/__usher/status/" + room)
		if err == nil {
			// The answer must be this usher's: a port that freeAddr let go
			// can be taken by another test's server before usher binds it
			// (usher then exits, and the other server answers 200).
			var st struct {
				ID string `json:"id"`
			}
			derr := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&st)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && derr == nil && st.ID == room {
				select {
				case <-p.done:
				default:
					return p
				}
			}
		}
		select {
		case <-p.done:
			log, _ := os.ReadFile(config + ".log")
			t.Fatalf("usher exited at start:\n%s", log)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatal("usher did not come up in 20 s")
	return nil
}

func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// e2eConfig is the contract config, scaled down: small limits, a
// 2 s refresh interval, 15 s sessions.
const e2eConfig = `listen: %s
store:
  embedded:
    path: %s
rooms:
  - id: sale
    name: Seal Brewing spring sale
    origin: %s
    routes:
      - path: /
    total_active_users: 20
    new_users_per_minute: 60
    session_duration: 15s
    queueing_method: fifo
    refresh_interval: 2s
    json_response_enabled: true
`

var e2eLimits = bench.Limits{
	TotalActiveUsers:  20,
	NewUsersPerMinute: 60,
	SessionDuration:   15 * time.Second,
	RefreshInterval:   2 * time.Second,
}

// e2eVisitors is the flash crowd: 100 visitors in 10 s, one in five gives
// up while waiting, the others browse for a few seconds.
func e2eVisitors(t *testing.T, target string) bench.Config {
	t.Helper()
	arr, err := bench.ParseArrivals("flash:100@10s")
	if err != nil {
		t.Fatal(err)
	}
	return bench.Config{
		Target:   target,
		Arrivals: arr,
		Seed:     42,
		Model: bench.VisitorModel{
			Browse:          bench.Uniform(3*time.Second, 10*time.Second),
			RequestEvery:    bench.Uniform(time.Second, 3*time.Second),
			AbandonFraction: 0.2,
			Patience:        bench.Uniform(3*time.Second, 30*time.Second),
		},
		Horizon: 4 * time.Minute,
	}
}

type e2eSetup struct {
	config, addr string
	origin       *bench.Origin
}

func setupE2E(t *testing.T) e2eSetup {
	t.Helper()
	origin := bench.NewOrigin("e2e shop")
	srv := httptest.NewServer(origin)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	addr := freeAddr(t)
	config := filepath.Join(dir, "usher.yaml")
	body := fmt.Sprintf(e2eConfig, addr, filepath.Join(dir, "data"), srv.URL)
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return e2eSetup{config: config, addr: addr, origin: origin}
}

// checkFlashCrowd asserts the single-node invariants on a run's report.
func checkFlashCrowd(t *testing.T, res bench.Result) {
	t.Helper()
	js, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("report:\n%s", js)
	if res.Admitted < 50 || res.Abandoned == 0 {
		t.Fatalf("admitted %d, abandoned %d: the run did not exercise the room", res.Admitted, res.Abandoned)
	}
	if res.MaxActiveRatio > 1 {
		t.Errorf("active users reached %d, over the limit of %d", res.MaxActive, e2eLimits.TotalActiveUsers)
	}
	if res.MaxRateRatio > 1 {
		t.Errorf("%d admissions in 60 s, over the limit of %d", res.MaxRate, e2eLimits.NewUsersPerMinute)
	}
	if res.Utilization < 0.9 {
		t.Errorf("utilisation while visitors waited: %.3f, want at least 0.9", res.Utilization)
	}
	if res.FIFOInversions != 0 {
		t.Errorf("%d FIFO inversions among waiting visitors", res.FIFOInversions)
	}
	if res.RequeuedWhileBrowsing != 0 {
		t.Errorf("%d visitors sent back to the line while browsing", res.RequeuedWhileBrowsing)
	}
}

func TestE2EFlashCrowd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	t.Parallel()
	s := setupE2E(t)
	startUsher(t, s.config, s.addr, "sale")
	tl, err := bench.Run(context.Background(), e2eVisitors(t, "http://"+s.addr+"/"))
	if err != nil {
		t.Fatal(err)
	}
	res := bench.Report(tl, e2eLimits)
	checkFlashCrowd(t, res)
	if res.Errors != 0 {
		t.Errorf("%d request errors: %v", res.Errors, tl.ErrorCounts())
	}
}

func TestE2EFlashCrowdSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	t.Parallel()
	s := setupE2E(t)
	p := startUsher(t, s.config, s.addr, "sale")
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		time.Sleep(25 * time.Second) // the queue is long and moving
		p.kill()
		startUsher(t, s.config, s.addr, "sale")
	}()
	tl, err := bench.Run(context.Background(), e2eVisitors(t, "http://"+s.addr+"/"))
	if err != nil {
		t.Fatal(err)
	}
	<-killed
	log, _ := os.ReadFile(s.config + ".log")
	if !strings.Contains(string(log), "not closed cleanly") {
		t.Fatalf("the restart did not go through crash recovery; log:\n%s", log)
	}
	checkFlashCrowd(t, bench.Report(tl, e2eLimits))
}
