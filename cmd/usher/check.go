package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admin"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/store/redis"
)

func (m *Main) check(ctx context.Context, args []string) error {
	fs := m.flags("check", "check --config FILE [--admin ADDR --token TOKEN]")
	path := fs.String("config", "usher.yaml", "the config file to check")
	addr := fs.String("admin", os.Getenv("USHER_ADMIN"), "ask the usher running there for its runtime overrides (env USHER_ADMIN)")
	token := fs.String("token", os.Getenv("USHER_TOKEN"), "its admin token (env USHER_TOKEN)")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := config.Load(*path)
	if err != nil {
		return configError(*path, err)
	}
	fmt.Fprintf(m.Stdout, "%s is valid.\n\n", *path)
	if err := cfg.Explain(m.Stdout); err != nil {
		return err
	}
	explainLayout(m.Stdout, cfg)
	if *addr == "" {
		fmt.Fprintln(m.Stdout, "\nRuntime overrides (changes made through the admin API, kept in the store over this file) were not checked:"+
			" pass --admin ADDR and --token (or USHER_ADMIN and USHER_TOKEN) to ask the running usher (the embedded store cannot be opened while usher runs).")
		return nil
	}
	if *token == "" {
		fmt.Fprintln(m.Stderr, "usher check: --admin needs --token (or USHER_TOKEN)")
		return errUsage
	}
	return m.checkOverrides(ctx, cfg, *addr, *token)
}

// checkOverrides prints the running usher's runtime overrides, which win
// over the file, and fails when they do not fit the file (a reload of it
// would be refused).
func (m *Main) checkOverrides(ctx context.Context, cfg *config.Config, addr, token string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ov, err := admin.NewClient(addr, token).Overrides(ctx)
	if err != nil {
		return fmt.Errorf("runtime overrides from %s: %w", addr, apiError(err))
	}
	w := m.Stdout
	if len(ov.Rooms) == 0 {
		fmt.Fprintf(w, "\nRuntime overrides (from the usher at %s): none; this file's values are in force.\n", addr)
		return nil
	}
	fmt.Fprintf(w, "\nRuntime overrides (from the usher at %s, version %d); they win over this file until dropped (usher room unset ROOM FIELD, usher room reset ROOM):\n", addr, ov.Version)
	rt := &config.Runtime{}
	for _, id := range slices.Sorted(maps.Keys(ov.Rooms)) {
		fmt.Fprintf(w, "  room %s:\n", id)
		fields := ov.Rooms[id]
		ro := config.RoomOverrides{}
		for _, name := range slices.Sorted(maps.Keys(fields)) {
			o := fields[name]
			fmt.Fprintf(w, "    %s = %s (file: %s), since %s by %s\n", name, summary(o.Value), summary(o.File), o.At.Format(time.RFC3339), o.By)
			v := o.Value
			if name == "webhooks" {
				v = withPlaceholderSecrets(v)
			}
			raw, err := json.Marshal(v)
			if err != nil {
				return err
			}
			ro[name] = config.Override{Value: raw, At: o.At, By: o.By}
		}
		rt.SetRoom(id, ro)
	}
	for _, id := range cfg.Orphans(rt) {
		fmt.Fprintf(w, "  room %s is not in this file: its overrides apply to nothing\n", id)
	}
	if _, err := cfg.WithRuntime(rt); err != nil {
		var v *config.ValidationError
		if errors.As(err, &v) {
			fmt.Fprintln(m.Stderr, "These runtime overrides do not fit this file (a reload of it would be refused):")
			for _, p := range v.Problems {
				fmt.Fprintln(m.Stderr, "  "+p.String())
			}
		}
		return errors.New("the runtime overrides do not fit this file")
	}
	return nil
}

// withPlaceholderSecrets returns a list of webhooks as the API shows it
// (secrets as "(set)", never sent) with a placeholder for each secret, so
// that the rest of each webhook can be checked against the file.
func withPlaceholderSecrets(v any) any {
	list, ok := v.([]any)
	if !ok {
		return v
	}
	out := make([]any, 0, len(list))
	for _, e := range list {
		if m, ok := e.(map[string]any); ok && m["secret"] == config.SecretShown {
			m = maps.Clone(m)
			m["secret"] = "placeholder-of-a-secret-not-shown"
			e = m
		}
		out = append(out, e)
	}
	return out
}

// summary shows a value, a list by its length.
func summary(v any) string {
	if l, ok := v.([]any); ok {
		if len(l) == 1 {
			return "1 item"
		}
		return fmt.Sprintf("%d items", len(l))
	}
	return show(v)
}

// configError presents a config problem list under the file's name.
func configError(path string, err error) error {
	var v *config.ValidationError
	if errors.As(err, &v) {
		return fmt.Errorf("%s is not valid:\n%w", path, err)
	}
	return err
}

// explainLayout says, on Redis, which layout each room uses and why (one
// shard, or a front and back shards: docs/scaling.md, "A room beyond one
// shard") and from how far back in its line check-ins are answered without
// a call of their own ("Check-ins far back in the line"). The embedded
// store has no layout; a room that sets shards there is warned of with
// the config's warnings.
func explainLayout(w io.Writer, cfg *config.Config) {
	rd := cfg.Store.Redis
	if rd == nil {
		return
	}
	fmt.Fprintln(w, "\nLayout on Redis: each shard of a room is one hash slot, which one Redis core serves (docs/scaling.md, \"A room beyond one shard\").")
	for i := range cfg.Rooms {
		rm := &cfg.Rooms[i]
		s := &rm.Settings
		if n := s.Shards; n > 1 {
			fmt.Fprintf(w, "  room %s: a front and %d back shards (shards: %d): waiters behind the serving horizon are counted on the back shards,"+
				" the front admits and keeps the line up to it.", rm.ID, n-1, n)
			if !rd.Cluster {
				fmt.Fprint(w, " All its shards are on one Redis server (store.redis.cluster is off): they spread the room's memory and script work over hash slots, not over cores.")
			}
			fmt.Fprintln(w)
		} else {
			fmt.Fprintf(w, "  room %s: one shard (the default): its decisions fit one Redis core up to about 16,000 a second, a line of a few million.\n", rm.ID)
		}
		if s.QueueingMethod != usher.FIFO && s.QueueingMethod != "" {
			fmt.Fprintf(w, "  room %s: %s: every check-in is one call (a draw needs the room's counts).\n", rm.ID, s.QueueingMethod)
			continue
		}
		iv := admission.MaxInterval(s)
		wait := iv + admission.MaxJitter(iv) + admission.Grace(iv)
		fmt.Fprintf(w, "  room %s: check-ins and new visitors with %d or more live waiters ahead are far back:"+
			" answered from each node's view and batched (its %d places, and %d a minute over two of the longest intervals, %v).\n",
			rm.ID, redis.FarMargin(s.TotalActiveUsers, s.NewUsersPerMinute, wait), s.TotalActiveUsers, s.NewUsersPerMinute, iv)
	}
}
