package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admin"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/draw"
	"github.com/usherhq/usher/internal/notify"
)

// monitorEvery is how often the event monitor reads the rooms while
// anything listens.
const monitorEvery = time.Second

// webhookDrain is how long a stopping usher waits for its webhooks'
// queued events to be delivered.
const webhookDrain = 2 * time.Second

// claimRoom is the name under which nodes sharing a store claim the
// reporting of room events (not a room id: those start with a letter or
// digit).
const claimRoom = "_notify"

// events are a node's event sources and their bus: the webhooks of the
// config in force, the monitor of the rooms, and the hooks in the engine
// and the admin API.
type events struct {
	bus  *notify.Bus
	mon  *notify.Monitor
	node string
	log  *slog.Logger
	// draws reads a room's verifiable draws (the engine's), for the
	// monitor's draw.committed and draw.revealed (nil: none).
	draws func(context.Context, *usher.Room, time.Time) (draw.Room, error)
}

func newEvents(log *slog.Logger) *events {
	node, _ := os.Hostname()
	return &events{
		bus:  notify.New(notify.Options{Logger: log, Now: nowFunc, UserAgent: "usher-webhook/" + buildVersion().Version}),
		node: node,
		log:  log,
	}
}

// startMonitor makes the monitor of the node's rooms; claim is set on a
// shared store (one node reports each window).
func (ev *events) startMonitor(st *state, status func(context.Context, *usher.Room, time.Time) (usher.RoomStats, error), store usher.Store, shared bool) {
	opts := notify.MonitorOptions{Rooms: st.rooms, Stats: status, Logger: ev.log, Draws: ev.draws}
	if shared {
		opts.Claim = func(ctx context.Context, key string, until time.Time) bool {
			id := sha256.Sum256([]byte(key))
			fresh, err := store.Spend(ctx, claimRoom, [16]byte(id[:16]), until)
			if err != nil {
				ev.log.Debug("event monitor: reporter claim failed", "err", err)
			}
			return err == nil && fresh
		}
	}
	ev.mon = notify.NewMonitor(ev.bus, opts)
}

// applied puts cfg's webhooks in force and has the monitor look at once
// (a setting that changed may start or stop the queueing).
func (ev *events) applied(cfg *config.Config) {
	ev.bus.SetWebhooks(webhookConfigs(cfg))
	if ev.mon != nil {
		ev.mon.Kick()
	}
}

// webhookConfigs returns cfg's webhooks as the bus runs them.
func webhookConfigs(cfg *config.Config) []notify.WebhookConfig {
	out := make([]notify.WebhookConfig, 0, len(cfg.Webhooks))
	for _, w := range cfg.Webhooks {
		out = append(out, notify.WebhookConfig{
			Room: w.Room, Name: w.Name, URL: w.URL, Secret: []byte(w.SecretValue()),
			Events: w.Events, VisitorSample: w.VisitorEvents, Timeout: w.Timeout, MaxQueue: w.MaxQueue,
		})
	}
	return out
}

// breakerJSON is breaker.opened's and breaker.closed's data.
type breakerJSON struct {
	Node     string `json:"node"`
	FailMode string `json:"fail_mode"`
	Error    string `json:"error,omitempty"`
}

// onBreaker publishes the engine's breaker opening and closing: events of
// the node (no room), for every room's webhooks that want them.
func (ev *events) onBreaker(failOpen bool) func(bool, error) {
	mode := "closed"
	if failOpen {
		mode = "open"
	}
	return func(open bool, err error) {
		e := notify.Event{Type: notify.BreakerClosed, Data: breakerJSON{Node: ev.node, FailMode: mode}}
		if open {
			e.Type = notify.BreakerOpened
			if err != nil {
				e.Data = breakerJSON{Node: ev.node, FailMode: mode, Error: usher.ErrorMessage(err)}
			}
		}
		ev.bus.Publish(e)
	}
}

// settingsJSON is room.settings_changed's data: the audit entry of an API
// change, or the fields a reload of the file changed.
type settingsJSON struct {
	// Source is "api" (a change through the admin API, by Token) or
	// "file" (a reload of the config file on Node).
	Source string `json:"source"`
	admin.AuditEntry
	Node string `json:"node,omitempty"`
}

// changed publishes an API change's audit entry.
func (ev *events) changed(e admin.AuditEntry) {
	ev.bus.Publish(notify.Event{Type: notify.SettingsChanged, Room: e.Room, Time: e.Time,
		Data: settingsJSON{Source: "api", AuditEntry: e}})
}

// reloaded publishes what a reload of the file changed, room by room.
func (ev *events) reloaded(from, to *config.Config) {
	now := nowFunc().UTC()
	for _, d := range admin.RoomDiffs(from, to) {
		entry := admin.AuditEntry{Time: now, Action: "room.reload", Room: d.Room, Target: "rooms/" + d.Room}
		if d.Before != nil {
			entry.Before = d.Before
		}
		if d.After != nil {
			entry.After = d.After
		}
		ev.bus.Publish(notify.Event{Type: notify.SettingsChanged, Room: d.Room, Time: now,
			Data: settingsJSON{Source: "file", AuditEntry: entry, Node: ev.node}})
	}
}

// decider is the engine as the gate sees it, with the per-visitor events
// and the summary's counts on top. While nothing listens it costs two
// atomic loads a decision.
type decider struct {
	*admission.Engine
	ev *events
}

// visitorJSON is the data of the per-visitor events.
type visitorJSON struct {
	// Visitor is the visitor's random id (from its ticket), to follow one
	// visitor across events.
	Visitor string `json:"visitor"`
	// Position is a waiter's place in line (ticket_issued; 0 unknown).
	Position int64 `json:"position,omitempty"`
	// WaitedSeconds is how long the visitor waited (admitted).
	WaitedSeconds *float64 `json:"waited_seconds,omitempty"`
	// SessionEnd is when the session ends (admitted) or ended
	// (session_ended).
	SessionEnd time.Time `json:"session_end,omitzero"`
	// Degraded says the decision was the fail mode's (the store could not
	// be reached).
	Degraded bool `json:"degraded,omitempty"`
}

// Decide decides with the engine, then counts and samples what happened.
func (d *decider) Decide(ctx context.Context, room *usher.Room, v usher.Visit) (usher.Decision, error) {
	dec, err := d.Engine.Decide(ctx, room, v)
	if err != nil || !d.ev.bus.Listening() {
		return dec, err
	}
	fresh := v.Ticket == nil
	arrival := fresh && (dec.Outcome == usher.Wait || dec.NewlyAdmitted) && dec.TicketChanged
	if d.ev.mon != nil {
		d.ev.mon.CountVisit(room.ID, arrival, dec.NewlyAdmitted)
	}
	if !d.ev.bus.WantsVisitors() {
		return dec, err
	}
	switch {
	case dec.NewlyAdmitted:
		if d.ev.bus.SampleVisitor(room.ID) {
			waited := v.Now.Sub(dec.Ticket.ArrivedAt).Seconds()
			if fresh {
				waited = 0
			}
			d.publish(notify.VisitorAdmitted, room, v.Now, visitorJSON{Visitor: hex.EncodeToString(dec.Ticket.VisitorID[:]),
				WaitedSeconds: &waited, SessionEnd: dec.Ticket.Until.UTC(), Degraded: dec.Degraded})
		}
	case arrival:
		if d.ev.bus.SampleVisitor(room.ID) {
			d.publish(notify.VisitorTicketIssued, room, v.Now, visitorJSON{Visitor: hex.EncodeToString(dec.Ticket.VisitorID[:]),
				Position: dec.Position, Degraded: dec.Degraded})
		}
	}
	if t := v.Ticket; dec.SessionEnded && t != nil {
		// An admitted visitor came back after its session ended, and this
		// decision is the first to tell (once per session, on any node; a
		// session that ends while its visitor is away is seen in the
		// summary's counts only).
		if d.ev.bus.SampleVisitor(room.ID) {
			d.publish(notify.VisitorSessionEnded, room, v.Now, visitorJSON{Visitor: hex.EncodeToString(t.VisitorID[:]), SessionEnd: room.Session(t, v.Now).End.UTC()})
		}
	}
	return dec, err
}

func (d *decider) publish(typ string, room *usher.Room, now time.Time, data visitorJSON) {
	d.ev.bus.Publish(notify.Event{Type: typ, Room: room.ID, Time: now, Data: data})
}

// Revoke ends a session with the engine, then samples the event: once
// per session, by the call that ended it.
func (d *decider) Revoke(ctx context.Context, room *usher.Room, visitor [8]byte, now time.Time) (bool, error) {
	ended, err := d.Engine.Revoke(ctx, room, visitor, now)
	if ended && d.ev.bus.WantsVisitors() && d.ev.bus.SampleVisitor(room.ID) {
		d.publish(notify.VisitorRevoked, room, now, visitorJSON{Visitor: hex.EncodeToString(visitor[:])})
	}
	return ended, err
}
