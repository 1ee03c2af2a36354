package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/gate"
	"github.com/usherhq/usher/internal/guard"
)

// state is what a reload swaps: the gate and the rooms it serves. Requests
// in flight finish on the gate they started on; the engine and its store
// are kept, so no waiting visitor or admitted session is dropped (their
// counts are per room id).
type state struct {
	cur atomic.Pointer[live]
}

type live struct {
	gate    *gate.Gate
	rooms   []*usher.Room
	trusted []netip.Prefix
	invites *guard.Invites
}

func (s *state) set(g *gate.Gate, rooms []*usher.Room, trusted []netip.Prefix, invites *guard.Invites) {
	s.cur.Store(&live{g, rooms, trusted, invites})
}

// invites returns the invite signer in force.
func (s *state) invites() *guard.Invites { return s.cur.Load().invites }

// rooms returns the rooms in force.
func (s *state) rooms() []*usher.Room { return s.cur.Load().rooms }

// roomIDs returns the IDs of the rooms in force.
func (s *state) roomIDs() []string {
	rooms := s.rooms()
	ids := make([]string, 0, len(rooms))
	for _, r := range rooms {
		ids = append(ids, r.ID)
	}
	return ids
}

// trusted returns the trusted proxies in force.
func (s *state) trusted() []netip.Prefix { return s.cur.Load().trusted }

// ServeHTTP serves r with the gate in force.
func (s *state) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.cur.Load().gate.ServeHTTP(w, r) }

// serveAuth answers forward auth on the private listener with the gate in
// force.
func (s *state) serveAuth(w http.ResponseWriter, r *http.Request) {
	s.cur.Load().gate.ForwardAuth().ServeHTTP(w, r)
}

// watchEvery is how often a watched config file is checked for changes.
const watchEvery = time.Second

// reloader reloads the config on SIGHUP and, with watch_config, when the
// file changes. A config that fails to load, or that changes what needs a
// restart, is refused with the reason in the log; the running one stays.
type reloader struct {
	path    string
	current *config.Config
	log     *slog.Logger
	apply   func(*config.Config) error
}

func (rl *reloader) run(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	last := fileStamp(rl.path)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			rl.reload("SIGHUP")
			last = fileStamp(rl.path)
		case <-tick.C:
			if !rl.current.WatchConfig {
				continue
			}
			if st := fileStamp(rl.path); st != last {
				last = st
				rl.reload("file changed")
			}
		}
	}
}

// reload loads the file and applies it, or logs why not.
func (rl *reloader) reload(why string) {
	next, err := config.Load(rl.path)
	if err == nil {
		err = rl.current.Reloadable(next)
	}
	if err == nil {
		err = rl.apply(next)
	}
	if err != nil {
		var v *config.ValidationError
		if errors.As(err, &v) {
			for _, p := range v.Problems {
				rl.log.Error("config reload refused; the running config stays", "trigger", why, "path", rl.path, "problem", p.String())
			}
			return
		}
		rl.log.Error("config reload refused; the running config stays", "trigger", why, "path", rl.path, "error", err)
		return
	}
	rl.current = next
	rl.log.Info("config reloaded", "trigger", why, "path", rl.path, "rooms", len(next.Rooms))
}

// fileStamp identifies a version of a file by size and modification time.
func fileStamp(path string) [2]int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return [2]int64{}
	}
	return [2]int64{fi.Size(), fi.ModTime().UnixNano()}
}
