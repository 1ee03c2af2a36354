package selfbench

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/usherhq/usher/docs/integrations"
)

// NginxMainConfig is the smallest nginx main config that runs nginx in
// dir (its pid file, logs and temporary files there) with the http-level
// files included, as a recipe would sit in conf.d/. accessLog false turns
// the access log off (usher bench), else it goes to dir/nginx-access.log.
func NginxMainConfig(dir string, workers int, accessLog bool, includes ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "worker_processes %d;\nerror_log %s/nginx-error.log info;\npid %s/nginx.pid;\n", workers, dir, dir)
	b.WriteString("events { worker_connections 4096; }\nhttp {\n")
	if accessLog {
		fmt.Fprintf(&b, "    access_log %s/nginx-access.log;\n", dir)
	} else {
		b.WriteString("    access_log off;\n")
	}
	for _, t := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&b, "    %s_temp_path %s/%s;\n", t, dir, t)
	}
	for _, inc := range includes {
		fmt.Fprintf(&b, "    include %s;\n", inc)
	}
	b.WriteString("}\n")
	return b.String()
}

// nginxProc is an nginx the bench started, in the foreground.
type nginxProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startNginxOn checks and runs nginx (bin) with the main config file
// main, prefix dir, on the CPUs cpus (a taskset list; empty: any), until
// stop; it returns once every address in addrs accepts connections.
func startNginxOn(ctx context.Context, cpus, bin, dir, main string, log io.Writer, addrs ...string) (*nginxProc, error) {
	// Started as root, nginx's workers run as another user: they must be
	// able to enter dir.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, bin, "-t", "-q", "-p", dir, "-c", main).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("nginx -t: %v: %s", err, strings.TrimSpace(string(out)))
	}
	cmd := pinnedCommand(cpus, bin, "-p", dir, "-c", main, "-g", "daemon off; master_process on;")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start nginx: %w", err)
	}
	p := &nginxProc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	deadline := time.Now().Add(20 * time.Second)
	for _, addr := range addrs {
		for {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-p.done:
				b, _ := os.ReadFile(filepath.Join(dir, "nginx-error.log"))
				return nil, fmt.Errorf("nginx exited at start: %s", strings.TrimSpace(string(b)))
			case <-ctx.Done():
				p.stop()
				return nil, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				p.stop()
				return nil, fmt.Errorf("nginx did not listen on %s in 20 s", addr)
			}
		}
	}
	return p, nil
}

// stop stops nginx: SIGTERM, on which the master stops its workers, or
// a kill after 5 s.
func (p *nginxProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// cpu returns the CPU time (user and system) nginx's master and workers
// have used so far (Linux; 0 elsewhere).
func (p *nginxProc) cpu() time.Duration {
	master := p.cmd.Process.Pid
	total := procCPU(master)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == master {
			continue
		}
		if ppid, _ := procStat(pid); ppid == master {
			total += procCPU(pid)
		}
	}
	return total
}

// clockTicks is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on
// Linux whatever the kernel's HZ).
const clockTicks = 100

// procCPU returns a process's CPU time (Linux; 0 elsewhere, or when it
// is gone): the time its threads ran, to the nanosecond, from each
// thread's /proc/<pid>/task/<tid>/schedstat; from /proc/<pid>/stat's
// user and system ticks (10 ms) when that is not there. A loaded machine
// serves a target a few hundred requests in a round: in ticks, its CPU
// read 0 (an external bench's origin at 140 requests a second failed its
// "CPU of its own process" check that way).
func procCPU(pid int) time.Duration {
	if d, ok := schedCPU(pid); ok {
		return d
	}
	_, ticks := procStat(pid)
	return time.Duration(ticks) * time.Second / clockTicks
}

// schedCPU sums the run time of a process's threads from schedstat.
// Threads that ended are not counted: the targets' threads (Go's, nginx's
// workers) live as long as the process.
func schedCPU(pid int) (time.Duration, bool) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) < 1 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		total += time.Duration(ns)
	}
	return total, true
}

// procStat reads a process's parent pid and utime+stime in clock ticks
// from /proc/<pid>/stat.
func procStat(pid int) (ppid int, ticks int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	// The command name, in parentheses, may hold spaces: fields start
	// after its closing parenthesis, with the state (field 3).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, 0
	}
	ppid, _ = strconv.Atoi(f[1])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return ppid, ut + st
}

// nginxPlainSite is nginx alone in front of the origin: the recipe's
// location / without the question to usher (the "origin" upstream is the
// recipe's).
const nginxPlainSite = `server {
    listen %s;
    location / {
        proxy_pass http://origin;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
    }
}
`

// nginxBench is one nginx serving two sites in front of the bench's
// origin: plainURL alone, usherURL asking usher first with
// docs/integrations/nginx.conf.
type nginxBench struct {
	*nginxProc
	plainURL, usherURL string
	dir                string
}

// startNginxBench starts nginx (bin) in front of env's origin and usher,
// with as many workers as there are CPUs (one when pinned to cpus, a
// taskset list).
func startNginxBench(ctx context.Context, cpus, bin string, env *Env) (*nginxBench, error) {
	dir, err := os.MkdirTemp("", "usher-bench-nginx-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*nginxBench, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	plainAddr, err := freeLoopback()
	if err != nil {
		return fail(err)
	}
	usherAddr, err := freeLoopback()
	if err != nil {
		return fail(err)
	}
	if env.authAddr == "" {
		return fail(fmt.Errorf("nginx bench: usher has no forward-auth listener"))
	}
	site, err := integrations.Recipe("nginx.conf", map[string]string{"{{LISTEN}}": usherAddr,
		"{{USHER}}": strings.TrimPrefix(env.UsherURL, "http://"), "{{USHER_AUTH}}": env.authAddr,
		"{{ORIGIN}}": strings.TrimPrefix(env.originURL, "http://"), "{{AUTH_CACHE}}": filepath.Join(dir, "auth-cache")})
	if err != nil {
		return fail(err)
	}
	workers := runtime.NumCPU()
	if cpus != "" {
		workers = 1
	}
	sitePath, plainPath, mainPath := filepath.Join(dir, "usher-site.conf"), filepath.Join(dir, "plain.conf"), filepath.Join(dir, "nginx.conf")
	for path, body := range map[string]string{
		sitePath:  site,
		plainPath: fmt.Sprintf(nginxPlainSite, plainAddr),
		mainPath:  NginxMainConfig(dir, workers, false, sitePath, plainPath),
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			return fail(err)
		}
	}
	p, err := startNginxOn(ctx, cpus, bin, dir, mainPath, io.Discard, plainAddr, usherAddr)
	if err != nil {
		return fail(err)
	}
	return &nginxBench{nginxProc: p, plainURL: "http://" + plainAddr, usherURL: "http://" + usherAddr, dir: dir}, nil
}

// stop stops nginx and removes its directory.
func (n *nginxBench) stop() {
	n.nginxProc.stop()
	os.RemoveAll(n.dir)
}
