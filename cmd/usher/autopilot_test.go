package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/admin"
	"github.com/usherhq/usher/internal/autopilot"
	"github.com/usherhq/usher/internal/store/local"
)

// An autopilot change goes to the audit log as autopilot.change by the
// token named autopilot, with the limits before and after and the reason,
// and leaves the runtime document's version alone (no node re-applies
// anything); a later admin change still swaps from the version it read.
func TestAutopilotAudit(t *testing.T) {
	store, err := local.Open(local.Options{Path: filepath.Join(t.TempDir(), "usher.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	v1, err := store.SwapRuntime(ctx, 0, []byte(`{}`), []byte(`{"action":"room.update"}`))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	at := time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC)
	recordAutopilotChange(store, log, "sale", autopilot.Change{
		At: at, Direction: "down", Reason: autopilot.ReasonLatency,
		FromRate: 600, ToRate: 300, FromConc: 1000, ToConc: 500,
		Latency: 412 * time.Millisecond, Threshold: 60 * time.Millisecond, ErrorRate: 0.004,
	})
	recordAutopilotChange(store, log, "sale", autopilot.Change{
		At: at.Add(10 * time.Second), Direction: "up", Reason: autopilot.ReasonRecovered,
		FromRate: 300, ToRate: 345,
		Latency: 20 * time.Millisecond, Threshold: 60 * time.Millisecond,
	})
	if v, err := store.RuntimeVersion(ctx); err != nil || v != v1 {
		t.Fatalf("runtime version after two autopilot changes = %d, %v; want %d, unchanged", v, err, v1)
	}
	recs, err := store.ReadAudit(ctx, 0, 10)
	if err != nil || len(recs) != 3 {
		t.Fatalf("ReadAudit = %d records, %v; want 3", len(recs), err)
	}
	var up, down admin.AuditEntry
	if err := json.Unmarshal(recs[0].Data, &up); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(recs[1].Data, &down); err != nil {
		t.Fatal(err)
	}
	if recs[1].Version <= v1 || recs[0].Version <= recs[1].Version {
		t.Errorf("record numbers %d, %d after version %d: want rising", recs[1].Version, recs[0].Version, v1)
	}
	if down.Action != "autopilot.change" || down.Token != "autopilot" || down.Room != "sale" || down.Target != "rooms/sale" || !down.Time.Equal(at) {
		t.Errorf("down entry %+v: want autopilot.change by autopilot on rooms/sale at %v", down, at)
	}
	if got, want := down.Reason, "latency: latency 412ms (threshold 60ms), error rate 0.40 %"; got != want {
		t.Errorf("down reason %q, want %q", got, want)
	}
	b, _ := json.Marshal(down.Before)
	a, _ := json.Marshal(down.After)
	if string(b) != `{"new_users_per_minute":600,"total_active_users":1000}` || string(a) != `{"new_users_per_minute":300,"total_active_users":500}` {
		t.Errorf("down before %s after %s", b, a)
	}
	b, _ = json.Marshal(up.Before)
	a, _ = json.Marshal(up.After)
	if string(b) != `{"new_users_per_minute":300}` || string(a) != `{"new_users_per_minute":345}` || up.Reason[:len("recovered:")] != "recovered:" {
		t.Errorf("up before %s after %s reason %q: want the rate alone (concurrency not governed)", b, a, up.Reason)
	}
	// An admin change from the version it read still swaps.
	if v2, err := store.SwapRuntime(ctx, v1, []byte(`{"n":2}`), []byte(`{"action":"room.update"}`)); err != nil || v2 <= recs[0].Version {
		t.Fatalf("SwapRuntime(%d) after the autopilot records = %d, %v; want a version above %d", v1, v2, err, recs[0].Version)
	}
}
