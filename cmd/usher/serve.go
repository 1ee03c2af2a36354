package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admin"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/analytics"
	"github.com/usherhq/usher/internal/autopilot"
	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/gate"
	"github.com/usherhq/usher/internal/guard"
	"github.com/usherhq/usher/internal/notify"
	"github.com/usherhq/usher/internal/server"
	"github.com/usherhq/usher/internal/store/local"
	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/ticket"
	"github.com/usherhq/usher/internal/token"
)

// nowFunc is the clock of the running program.
var nowFunc = time.Now

func (m *Main) serve(ctx context.Context, args []string) error {
	fs := m.flags("serve", "serve --config FILE")
	path := fs.String("config", "usher.yaml", "the config file")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := config.Load(*path)
	if err != nil {
		return configError(*path, err)
	}
	return m.run(ctx, cfg, m.logger(), *path)
}

// storeFile is the embedded store's file inside store.embedded.path.
const storeFile = "usher.db"

// runtimePoll is how often a node on a shared store checks the runtime
// overrides' version: a change made on one node is in force on every
// node within about this long.
const runtimePoll = time.Second

// adminTokens returns the admin API's tokens from the config.
func adminTokens(cfg *config.Config) []admin.Token {
	var out []admin.Token
	for _, t := range cfg.Admin.BearerTokens() {
		out = append(out, admin.Token{Name: t.Name, Secret: t.Secret, Write: t.Write})
	}
	return out
}

// run serves cfg until ctx is done, then shuts down gracefully: listeners
// stop accepting, requests in flight finish, and the store is flushed and
// closed cleanly. With a config path, SIGHUP (and a change of the file,
// with watch_config) reloads it: see reloader.
func (m *Main) run(ctx context.Context, cfg *config.Config, log *slog.Logger, path string) error {
	store, engineOpts, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := store.Close(); err != nil {
			log.Error("closing the embedded store", "err", err)
		}
	}()
	// The runtime overrides (changes made through the admin API) are kept
	// in the store over the config file: the node starts with both.
	layers := admin.NewLayers(store, log)
	n, err := newNode(ctx, layers.Start(ctx, cfg), log, store, engineOpts)
	if err != nil {
		return err
	}
	defer func() {
		// Events published just before the stop still go out, for a
		// moment.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), webhookDrain)
		defer cancel()
		n.events.bus.Drain(dctx)
	}()
	n.events.draws = n.engine.Draws
	n.events.startMonitor(n.st, n.engine.Status, store, cfg.Store.Redis != nil)
	// The rooms' state at start, before any request or change: what
	// changes from here is an event.
	n.events.mon.Check(ctx, nowFunc())
	layers.SetApply(n.apply)
	layers.SetReloaded(n.events.reloaded)
	n.metrics.RegisterLayers(layers)
	engine, st, metrics := n.engine, n.st, n.metrics

	pub, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	var fa net.Listener
	if cfg.ForwardAuth.Listen != "" {
		if fa, err = net.Listen("tcp", cfg.ForwardAuth.Listen); err != nil {
			pub.Close()
			return fmt.Errorf("forward_auth.listen: %w", err)
		}
	}
	var adm net.Listener
	if cfg.Admin.Listen != "" {
		if adm, err = net.Listen("tcp", cfg.Admin.Listen); err != nil {
			pub.Close()
			if fa != nil {
				fa.Close()
			}
			return fmt.Errorf("admin.listen: %w", err)
		}
	}
	// Name the node in its own events (breaker, reloads) by host and
	// public address: several nodes may share a host.
	n.events.node += " " + pub.Addr().String()
	if m.Ready != nil {
		admAddr := ""
		if adm != nil {
			admAddr = adm.Addr().String()
		}
		m.Ready(pub.Addr().String(), admAddr)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Stopping ends the event streams at once (the admin listener's
	// graceful shutdown would otherwise wait for them).
	context.AfterFunc(ctx, n.events.bus.EndStreams)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	serve := func(ln net.Listener, h func() error) {
		wg.Go(func() {
			if err := h(); err != nil {
				errs <- err
				cancel()
			}
		})
	}
	serve(pub, func() error { return server.Serve(ctx, pub, n.handler, log.With("listener", "public")) })
	if fa != nil {
		h := server.RequestIDFunc(n.st.trusted, server.Recover(log, http.HandlerFunc(n.st.serveAuth)))
		serve(fa, func() error { return server.Serve(ctx, fa, h, log.With("listener", "forward-auth")) })
	} else {
		// A proxy configured for the forward auth of earlier versions
		// asks the public listener, which answers 404 now: say why.
		log.Info("forward auth is off: no forward_auth.listen (the public listener answers /__usher/auth 404)")
	}
	if adm != nil {
		ah := admin.New(admin.Options{
			Tokens:    adminTokens(cfg),
			Layers:    layers,
			Rooms:     st.rooms,
			Status:    engine.Status,
			Metrics:   metrics,
			Logger:    log,
			Version:   buildVersion().Version,
			Invite:    n.invite,
			Autopilot: n.pilot.State,
			Changed:   n.events.changed,
			Events:    n.events.bus,
			Analytics: store,
		})
		// The dashboard's live streams end with the server, not at the
		// shutdown timeout.
		stopLive := context.AfterFunc(ctx, ah.Close)
		defer stopLive()
		serve(adm, func() error {
			return server.Serve(ctx, adm, server.Recover(log, ah), log.With("listener", "admin"))
		})
	}
	n.background(ctx, &wg, cfg, store, log)
	wg.Go(func() { n.events.mon.Run(ctx, nowFunc, monitorEvery) })
	if cfg.Store.Redis != nil {
		// Other nodes change the runtime overrides too: find their
		// changes. (The embedded store has one node, which applies its
		// own changes as it makes them.)
		wg.Go(func() { layers.Poll(ctx, runtimePoll) })
	}
	if path != "" {
		rl := &reloader{path: path, current: cfg, log: log, apply: func(next *config.Config) error { return layers.SetFile(ctx, next) }}
		wg.Go(func() { rl.run(ctx) })
	}
	log.Info("usher is running", "version", buildVersion().Version, "public", pub.Addr().String(), "rooms", len(st.rooms()))
	wg.Wait()
	close(errs)
	return errors.Join(collect(errs)...)
}

// node is one usher's decision stack over a store: the engine, the key
// ring, the gate in force (swapped on reload), the metrics, and the public
// handler in front of them.
type node struct {
	store     usher.Store
	engine    *admission.Engine
	ring      *keyRing
	fromStore bool // the key ring is kept in the store, not the config
	metrics   *admin.Metrics
	pilot     *autopilot.Pilot
	events    *events
	decider   *decider
	recorder  *analytics.Recorder
	priors    *analytics.Priors // what each room learned from its earlier lines
	clock     *clockWatch       // on a shared store: the nodes' clocks against it
	st        *state
	handler   http.Handler
	log       *slog.Logger
}

// newNode builds the node of cfg over store.
func newNode(ctx context.Context, cfg *config.Config, log *slog.Logger, store usher.Store, opts admission.Options) (*node, error) {
	ring, fromStore, err := loadKeyRing(ctx, cfg, store, log)
	if err != nil {
		return nil, err
	}
	ev := newEvents(log)
	opts.OnBreaker = ev.onBreaker(opts.FailOpen)
	opts.ClientKeys = ring.clientKeys
	n := &node{store: store, ring: ring, fromStore: fromStore, st: &state{}, log: log, events: ev}
	n.metrics = admin.NewMetrics(n.st.rooms, func(ctx context.Context, room *usher.Room, now time.Time) (usher.RoomStats, error) {
		return n.engine.Status(ctx, room, now)
	})
	// The engine's observations make the metrics' per-visitor counters and
	// the analytics the node flushes to the store.
	n.metrics.SetLapsed(store.Lapsed)
	n.recorder = analytics.NewRecorder(analytics.Options{Sink: store, Stats: store.Stats, Lapsed: store.Lapsed, Rooms: n.st.roomIDs, Logger: log, Metrics: n.metrics})
	if opts.Observer != nil {
		opts.Observer = admission.Observers{opts.Observer, n.recorder}
	} else {
		opts.Observer = n.recorder
	}
	pilot := &autopilot.Pilot{Logger: log}
	if sh, ok := store.(autopilot.Shared); ok {
		// The nodes on one store pool their samples and share one figure.
		pilot.Shared = sh
	}
	opts.Limiter = pilot
	n.pilot = pilot
	n.priors = &analytics.Priors{}
	opts.Prior = n.priors.Prior
	n.engine = admission.New(store, opts)
	pilot.Status = n.engine.Status
	n.decider = &decider{Engine: n.engine, ev: ev}
	registerEngineMetrics(n.metrics, n.engine)
	registerFarBackMetrics(n.metrics, store)
	if cr, ok := store.(clockReader); ok && cfg.Store.Redis != nil {
		n.clock = newClockWatch(cr, cfg.Store.Redis.Slack(), n.engine.SetCellSlack, log)
		n.clock.measured = n.engine.SetClockSpread
		n.clock.register(n.metrics)
	}
	ev.bus.Register(n.metrics.Registry())
	count := registerAutopilotMetrics(n.metrics, pilot)
	pilot.OnChange = func(room string, c autopilot.Change) {
		count(room, c)
		recordAutopilotChange(store, log, room, c)
		ev.bus.Publish(notify.Event{Type: notify.AutopilotChanged, Room: room, Time: c.At, Data: autopilotEvent(c)})
	}
	if err := n.apply(cfg); err != nil {
		return nil, err
	}
	n.handler = server.RequestIDFunc(n.st.trusted, server.Recover(log, n.st))
	return n, nil
}

// apply builds a gate for cfg's rooms and puts it in force, with cfg's key
// ring when the ring comes from the config (a ring kept in the store stays
// until a restart).
func (n *node) apply(cfg *config.Config) error {
	trusted, err := cfg.TrustedProxyPrefixes()
	if err != nil {
		return err
	}
	var keys []usher.Key
	if !n.fromStore {
		if keys, err = cfg.KeyRing(); err != nil {
			return err
		}
		if _, err := ticket.NewRing(keys); err != nil {
			return err
		}
	}
	rooms := make([]*usher.Room, len(cfg.Rooms))
	for i := range cfg.Rooms {
		rooms[i] = &cfg.Rooms[i]
	}
	powKeys := keys
	if powKeys == nil {
		powKeys = n.ring.current()
	}
	pow, err := guard.NewPoW(powKeys, guard.Options{})
	if err != nil {
		return err
	}
	invites, err := guard.NewInvites(powKeys)
	if err != nil {
		return err
	}
	notes, err := guard.NewNotes(powKeys, "page")
	if err != nil {
		return err
	}
	var tokens *gate.Tokens
	if at := cfg.AdmissionToken; !at.Disabled {
		signer, err := token.New(powKeys, token.Options{Issuer: at.Issuer, TTL: at.TTL})
		if err != nil {
			return err
		}
		tokens = &gate.Tokens{Signer: signer, Header: at.Header}
	}
	n.pilot.SetRooms(rooms, nowFunc())
	g, err := gate.New(gate.Options{
		Health:        n.pilot.Recorder,
		PoW:           pow,
		Spent:         n.store,
		Invites:       invites,
		InviteUses:    n.store,
		Tokens:        tokens,
		Notes:         notes,
		Rooms:         rooms,
		DefaultOrigin: cfg.Origin,
		Decider:       n.decider,
		Sealer:        n.ring,
		Trusted:       trusted,
		Logger:        n.log,
		Observe:       n.metrics.ObserveDecision,
		IPLists:       cfg.IPLists(),
		CountryHeader: cfg.CountryHeader,

		RejectUnknownHosts: cfg.RejectUnknownHosts(),
	})
	if err != nil {
		return err
	}
	if keys != nil {
		if err := n.ring.set(keys); err != nil {
			return err
		}
	}
	n.st.set(g, rooms, trusted, invites)
	n.events.applied(cfg)
	for _, w := range cfg.Warnings() {
		n.log.Warn("config: " + w)
	}
	return nil
}

// invite makes an invite link's text with the keys in force.
func (n *node) invite(room string, uses int, expires time.Time, mode usher.InviteMode) (string, error) {
	text, _, err := n.st.invites().New(room, uses, expires, mode, nowFunc())
	return text, err
}

// background runs the node's background work until ctx ends: on a shared
// store, keeping the key ring there.
func (n *node) background(ctx context.Context, wg *sync.WaitGroup, cfg *config.Config, store usher.Store, log *slog.Logger) {
	wg.Go(func() { n.recorder.Run(ctx, analyticsFlush) })
	wg.Go(func() { n.priors.Run(ctx, store, n.st.roomIDs, priorsRefresh) })
	if n.fromStore && cfg.Store.Redis != nil {
		wg.Go(func() { n.ring.keep(ctx, store, log) })
	}
	wg.Go(func() { n.pilot.Run(ctx) })
	if n.clock != nil {
		n.clock.node = n.events.node // named by host and public address by now
		wg.Go(func() { n.clock.run(ctx) })
	}
}

func collect(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// sentinelOptions returns the store's Sentinel options for sen (nil: no
// Sentinel).
func sentinelOptions(sen *config.RedisSentinel) *redis.Sentinel {
	if sen == nil {
		return nil
	}
	return &redis.Sentinel{MasterName: sen.MasterName, Addrs: sen.Addrs, Username: sen.Username, Password: sen.Secret()}
}

// analyticsFlush is how often a node samples its rooms' counters and
// flushes its analytics to the store.
const analyticsFlush = 5 * time.Second

// priorsRefresh is how often a node reads its rooms' learned priors from
// their analytics (a line freezes the one it forms with).
const priorsRefresh = time.Minute

// openStore opens the configured store and returns the engine options that
// go with it: a shared store keeps sessions' counts a clock slack longer
// and applies the fail mode when unreachable.
func openStore(ctx context.Context, cfg *config.Config, log *slog.Logger) (usher.Store, admission.Options, error) {
	opts := admission.Options{Logger: log}
	if rd := cfg.Store.Redis; rd != nil {
		s, err := redis.Open(ctx, redis.Options{
			Addrs:     rd.Addrs,
			Sentinel:  sentinelOptions(rd.Sentinel),
			Username:  rd.Username,
			Password:  rd.Secret(),
			DB:        rd.DB,
			TLS:       rd.TLS,
			TLSConfig: rd.ClientTLS(),
			// Admissions wait for this many replicas (store.redis.wait_replicas).
			WaitReplicas: rd.WaitReplicas,
			Cluster:      rd.Cluster,
			KeyPrefix:    rd.KeyPrefix,
			Timeout:      rd.Timeout,
			// A session's count outlives its hold by the slack, rounded
			// up to the second: at most MaxClockSlack, to which the nodes
			// raise clock_slack while their clocks are further apart
			// (clockWatch).
			RecoveryMargin: config.MaxClockSlack + time.Second,
			Logger:         log,
		})
		if err != nil {
			return nil, opts, fmt.Errorf("store.redis: %w", err)
		}
		opts.CellSlack = rd.Slack()
		opts.FailOpen = rd.FailMode == "open"
		return s, opts, nil
	}
	dir := cfg.Store.Embedded.Path
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, opts, fmt.Errorf("store.embedded.path: %w", err)
	}
	s, err := local.Open(local.Options{Path: filepath.Join(dir, storeFile), Logger: log})
	return s, opts, err
}
