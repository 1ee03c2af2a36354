package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/config"
)

// maxRuntimeDoc bounds the runtime document: it is read by every node
// each time it changes.
const maxRuntimeDoc = 4 << 20

// Layers are the two layers of the running config: the config file, and
// the runtime document (the changes made through the API) that the store
// keeps over it, with the effective config, the file with the document
// applied, in force on this node. A change made through the API goes to
// the store and is applied here at once; other nodes find it when they
// poll the store's version (Poll). A reload of the file applies the
// document over the new file (SetFile).
type Layers struct {
	store usher.Store
	log   *slog.Logger
	apply func(*config.Config) error

	mu       sync.Mutex // serialises loading and applying
	cur      atomic.Pointer[Snapshot]
	reloaded func(from, to *config.Config) // SetReloaded
	bad      int64                         // the last version that did not fit this node's file (logged once)
}

// Snapshot is the layers in force on a node at a moment. It does not
// change once made.
type Snapshot struct {
	// File is the config file as loaded.
	File *config.Config
	// Runtime is the runtime document in force, and Version its version
	// in the store (0: none).
	Runtime *config.Runtime
	Version int64
	// Effective is File with Runtime applied: what the node runs. At
	// start, the overrides of a room that do not fit the file are left out
	// (see Start).
	Effective *config.Config
	// Unfit holds, by room id, why the room's overrides are not in force
	// (they did not fit the file at start); nil when all are.
	Unfit map[string][]string
}

// NewLayers returns the layers of a node over store; Start sets them up.
func NewLayers(store usher.Store, log *slog.Logger) *Layers {
	if log == nil {
		log = slog.Default()
	}
	return &Layers{store: store, log: log, apply: func(*config.Config) error { return nil }}
}

// SetApply sets the function that puts an effective config in force on
// the node (its gate); until it is set, nothing is applied.
func (l *Layers) SetApply(apply func(*config.Config) error) { l.apply = apply }

// SetReloaded sets a function called after a reload of the config file
// is in force, with the effective configs before and after. It must not
// block.
func (l *Layers) SetReloaded(f func(from, to *config.Config)) { l.reloaded = f }

// Current returns the layers in force on this node (no store call).
func (l *Layers) Current() *Snapshot { return l.cur.Load() }

// Start reads the runtime document and returns the config to start with:
// file with the document applied. The config file stays the bootstrap: a
// document that cannot be read leaves the file alone in force (logged;
// Poll applies the document once it can), and the overrides of a room
// that no longer fit the file are left out, that room running on the
// file's values (logged, with how to drop them), so that a node always
// starts.
func (l *Layers) Start(ctx context.Context, file *config.Config) *config.Config {
	snap := &Snapshot{File: file, Runtime: &config.Runtime{}, Effective: file}
	defer func() { l.cur.Store(snap) }()
	v, data, err := l.store.LoadRuntime(ctx)
	if err != nil {
		l.log.Error("runtime overrides not read; starting on the config file alone", "err", err)
		return file
	}
	rt, err := config.ParseRuntime(data)
	if err != nil {
		l.log.Error("runtime overrides not read; starting on the config file alone", "version", v, "err", err)
		return file
	}
	snap.Runtime, snap.Version = rt, v
	eff, dropped := fitRuntime(file, rt)
	for room, problems := range dropped {
		for _, p := range problems {
			l.log.Error("runtime overrides of a room do not fit the config file; the room runs on the file's values",
				"room", room, "version", v, "problem", p, "fix", "usher room reset "+room)
		}
	}
	snap.Effective = eff
	if len(dropped) > 0 {
		snap.Unfit = dropped
	}
	for _, id := range file.Orphans(rt) {
		l.log.Warn("runtime overrides of a room the config file does not have; kept, applied to nothing", "room", id)
	}
	if v != 0 {
		l.log.Info("runtime overrides applied over the config file", "version", v, "rooms", len(rt.Rooms)-len(dropped))
	}
	return eff
}

// fitRuntime applies rt over file, leaving out the overrides of the rooms
// whose problems stop it (all of them when the problems name no room that
// has overrides). It returns the config and the problems of the rooms
// left out.
func fitRuntime(file *config.Config, rt *config.Runtime) (*config.Config, map[string][]string) {
	dropped := make(map[string][]string)
	try := rt.Clone()
	for {
		eff, err := file.WithRuntime(try)
		if err == nil {
			return eff, dropped
		}
		var v *config.ValidationError
		named := false
		if errors.As(err, &v) {
			for _, p := range v.Problems {
				if try.Room(p.Room) != nil {
					named = true
					dropped[p.Room] = append(dropped[p.Room], p.String())
				}
			}
		}
		if !named {
			for id := range try.Rooms {
				dropped[id] = append(dropped[id], err.Error())
			}
			return file, dropped
		}
		for id := range dropped {
			try.SetRoom(id, nil)
		}
	}
}

// SetFile puts a reloaded config file in force with the runtime document
// over it (the store's latest, or the one in force when the store cannot
// be read). It changes nothing and returns the problems when the document
// does not fit the new file, so that the reload is refused as a bad file
// would be.
func (l *Layers) SetFile(ctx context.Context, next *config.Config) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.cur.Load()
	rt, v := cur.Runtime, cur.Version
	if sv, data, err := l.store.LoadRuntime(ctx); err != nil {
		l.log.Warn("runtime overrides not read for the reload; applying the ones in force", "version", v, "err", err)
	} else if sv != v {
		if srt, err := config.ParseRuntime(data); err == nil {
			rt, v = srt, sv
		}
	}
	eff, err := next.WithRuntime(rt)
	if err != nil {
		var ve *config.ValidationError
		if errors.As(err, &ve) {
			for i := range ve.Problems {
				ve.Problems[i].Message += " (with the runtime overrides over the file; `usher room reset ROOM` drops a room's overrides)"
			}
		}
		return err
	}
	if err := l.apply(eff); err != nil {
		return err
	}
	l.cur.Store(&Snapshot{File: next, Runtime: rt, Version: v, Effective: eff})
	l.logChanges("config file reloaded", v, cur.Effective, eff)
	if l.reloaded != nil {
		l.reloaded(cur.Effective, eff)
	}
	return nil
}

// Refresh reads the runtime document from the store and, when its
// version is not the one in force, applies it over the file. A document
// that does not fit this node's file is logged once per version and not
// applied; the error says why.
func (l *Layers) Refresh(ctx context.Context) (*Snapshot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.cur.Load()
	v, data, err := l.store.LoadRuntime(ctx)
	if err != nil {
		return cur, err
	}
	if v == cur.Version {
		return cur, nil
	}
	rt, err := config.ParseRuntime(data)
	var eff *config.Config
	if err == nil {
		eff, err = cur.File.WithRuntime(rt)
	}
	if err != nil {
		if v != l.bad {
			l.bad = v
			l.log.Error("runtime overrides do not fit this node's config file; the running config stays",
				"version", v, "in_force", cur.Version, "problem", err.Error())
		}
		return cur, err
	}
	if err := l.apply(eff); err != nil {
		return cur, err
	}
	next := &Snapshot{File: cur.File, Runtime: rt, Version: v, Effective: eff}
	l.cur.Store(next)
	l.logChanges("runtime overrides applied", v, cur.Effective, eff)
	return next, nil
}

// Poll checks the store's runtime version every interval until ctx ends,
// and applies a new version (Refresh): one small read per interval.
func (l *Layers) Poll(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		v, err := l.store.RuntimeVersion(ctx)
		if err != nil {
			if !failing && ctx.Err() == nil {
				l.log.Warn("runtime overrides: cannot read the store's version; retrying", "err", err)
			}
			failing = true
			continue
		}
		failing = false
		if v == l.Current().Version || v == l.badVersion() {
			continue
		}
		if _, err := l.Refresh(ctx); err != nil && usher.ErrorCode(err) == usher.EUnavailable && ctx.Err() == nil {
			l.log.Warn("runtime overrides: cannot read the store's document; retrying", "err", err)
		}
	}
}

func (l *Layers) badVersion() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bad
}

// load reads the store's runtime document for a change.
func (l *Layers) load(ctx context.Context) (int64, *config.Runtime, error) {
	v, data, err := l.store.LoadRuntime(ctx)
	if err != nil {
		return 0, nil, err
	}
	rt, err := config.ParseRuntime(data)
	if err != nil {
		return 0, nil, usher.Errorf(usher.EInternal, "the stored runtime document does not read: %v", err)
	}
	return v, rt, nil
}

// commit stores rt as the version after from, with its audit record, and
// applies it here over the file in force. An error with code
// usher.EConflict says the store's version moved on: nothing changed.
func (l *Layers) commit(ctx context.Context, from int64, rt *config.Runtime, eff *config.Config, file *config.Config, audit []byte, what string) (int64, error) {
	data, err := rt.Marshal()
	if err != nil {
		return 0, err
	}
	if len(data) > maxRuntimeDoc {
		return 0, usher.Errorf(usher.EInvalid, "the runtime document would be %d bytes, more than %d: drop overrides that are no longer needed", len(data), maxRuntimeDoc)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	v, err := l.store.SwapRuntime(ctx, from, data, audit)
	if err != nil {
		return 0, err
	}
	cur := l.cur.Load()
	if cur.File != file {
		// The file was reloaded while the change was being made.
		if eff, err = cur.File.WithRuntime(rt); err != nil {
			l.bad = v
			return v, fmt.Errorf("stored as version %d, but it does not fit this node's reloaded config file: %w", v, err)
		}
	}
	if err := l.apply(eff); err != nil {
		return v, fmt.Errorf("stored as version %d, but not applied on this node: %w", v, err)
	}
	l.cur.Store(&Snapshot{File: cur.File, Runtime: rt, Version: v, Effective: eff})
	l.logChanges(what, v, cur.Effective, eff)
	return v, nil
}

// logChanges logs what differs between two effective configs, one line
// per room that changed.
func (l *Layers) logChanges(msg string, version int64, from, to *config.Config) {
	changes := roomChanges(from, to)
	if len(changes) == 0 {
		l.log.Info(msg+"; no room changed", "version", version)
		return
	}
	for _, c := range changes {
		l.log.Info(msg, "version", version, "room", c.room, "changes", c.text)
	}
}

// roomChange is what changed in one room.
type roomChange struct {
	room, text string
}

// roomChanges lists the rooms whose fields differ, with each field's old
// and new value: "queue_all false → true; total_active_users 200 → 500".
func roomChanges(from, to *config.Config) []roomChange {
	old := make(map[string]map[string]any)
	var ids []string
	for i := range from.Rooms {
		old[from.Rooms[i].ID] = encodeRoom(from, &from.Rooms[i])
		ids = append(ids, from.Rooms[i].ID)
	}
	var out []roomChange
	seen := make(map[string]bool)
	for i := range to.Rooms {
		id := to.Rooms[i].ID
		seen[id] = true
		now := encodeRoom(to, &to.Rooms[i])
		was, ok := old[id]
		if !ok {
			out = append(out, roomChange{id, "room added"})
			continue
		}
		if text := fieldChanges(was, now); text != "" {
			out = append(out, roomChange{id, text})
		}
	}
	for _, id := range ids {
		if !seen[id] {
			out = append(out, roomChange{id, "room removed"})
		}
	}
	return out
}

// fieldChanges describes the fields that differ between two encoded
// rooms; "" when none does.
func fieldChanges(was, now map[string]any) string {
	keys := make(map[string]bool)
	for k := range was {
		keys[k] = true
	}
	for k := range now {
		keys[k] = true
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		a, b := compactJSON(was[k]), compactJSON(now[k])
		if a == b {
			continue
		}
		if k == "events" || k == "rules" {
			parts = append(parts, fmt.Sprintf("%s changed (%d → %d)", k, listLen(was[k]), listLen(now[k])))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s → %s", k, short(a), short(b)))
	}
	return strings.Join(parts, "; ")
}

func listLen(v any) int {
	l, _ := v.([]any)
	return len(l)
}

// short cuts a value's text to a length a log line can hold.
func short(s string) string {
	if s == "" {
		return "(none)"
	}
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// RoomDiff is what a change of the config did to one room: the fields
// that differ, with their values before and after as the file writes
// them (webhooks without their secrets, as encodeRoom shows them).
type RoomDiff struct {
	Room string
	// Before and After hold the fields that changed; a room added has no
	// Before, a room removed no After.
	Before, After map[string]any
}

// RoomDiffs lists the rooms whose fields differ between two effective
// configs, in the order of to, then the rooms removed.
func RoomDiffs(from, to *config.Config) []RoomDiff {
	old := make(map[string]map[string]any, len(from.Rooms))
	for i := range from.Rooms {
		old[from.Rooms[i].ID] = encodeRoom(from, &from.Rooms[i])
	}
	var out []RoomDiff
	seen := make(map[string]bool)
	for i := range to.Rooms {
		id := to.Rooms[i].ID
		seen[id] = true
		now := encodeRoom(to, &to.Rooms[i])
		was, ok := old[id]
		if !ok {
			out = append(out, RoomDiff{Room: id, After: now})
			continue
		}
		d := RoomDiff{Room: id, Before: map[string]any{}, After: map[string]any{}}
		for k := range was {
			if _, ok := now[k]; !ok {
				d.Before[k] = was[k]
			}
		}
		for k, v := range now {
			if compactJSON(was[k]) != compactJSON(v) {
				if w, ok := was[k]; ok {
					d.Before[k] = w
				}
				d.After[k] = v
			}
		}
		if len(d.Before) > 0 || len(d.After) > 0 {
			out = append(out, d)
		}
	}
	for i := range from.Rooms {
		if id := from.Rooms[i].ID; !seen[id] {
			out = append(out, RoomDiff{Room: id, Before: old[id]})
		}
	}
	return out
}
