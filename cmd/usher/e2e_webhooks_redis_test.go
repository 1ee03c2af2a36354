package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/admin"
	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/notify"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// webhookRedisConfig is one of two nodes of TestE2EWebhooksRedis.
const webhookRedisConfig = `listen: %s
admin:
  listen: %s
  token: e2e-write
store:
  redis:
    addrs: [%s]
    timeout: 500ms
rooms:
  - id: sale
    origin: %s
    total_active_users: 100
    new_users_per_minute: 100
    json_response_enabled: true
    webhooks:
      - name: ops
        url: %s
        secret: %s
        events: [queueing.*, room.settings_changed, breaker.*]
`

// TestE2EWebhooksRedis runs two nodes (the binary) on one real
// redis-server, each with the same webhook: a queue_all switched on
// through node 1 is sent once as room.settings_changed (by node 1) and
// once as queueing.started (by the node reporting that window), not once
// per node. Then redis-server is killed: each node's breaker.opened
// arrives, naming the node; restarted, each node's breaker.closed.
func TestE2EWebhooksRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	rd := redistest.StartServer(t)
	rc := newReceiver(t, 0)
	origin := httptest.NewServer(bench.NewOrigin("webhook shop"))
	t.Cleanup(origin.Close)
	dir := t.TempDir()
	var pubs, adms []string
	for i := range 2 {
		pub, adm := freeAddr(t), freeAddr(t)
		path := filepath.Join(dir, fmt.Sprintf("node%d.yaml", i))
		body := fmt.Sprintf(webhookRedisConfig, pub, adm, rd.Addr(), origin.URL, rc.srv.URL, webhookE2ESecret)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		startUsher(t, path, pub, "sale")
		pubs, adms = append(pubs, pub), append(adms, adm)
	}
	// Change the room away from the edge of a reporting window, so that
	// one node reports the whole change.
	for time.Now().Unix()%int64(notify.ReporterWindow/time.Second) != 2 {
		time.Sleep(50 * time.Millisecond)
	}
	c := admin.NewClient(adms[0], "e2e-write")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := c.Room(ctx, "sale")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PatchRoom(ctx, "sale", v.ETag, map[string]any{"queue_all": true}); err != nil {
		t.Fatal(err)
	}
	rc.wait(t, 10*time.Second, "queueing.started", func(ds []delivery) bool { return len(ofType(ds, notify.QueueingStarted)) >= 1 })
	time.Sleep(3 * time.Second) // any duplicate would have come by now
	rc.mu.Lock()
	got := append([]delivery(nil), rc.got...)
	rc.mu.Unlock()
	if n, m := len(ofType(got, notify.SettingsChanged)), len(ofType(got, notify.QueueingStarted)); n != 1 || m != 1 {
		t.Errorf("two nodes sent %d room.settings_changed and %d queueing.started, want 1 and 1", n, m)
	}

	// The store goes away: each node's breaker opens.
	rd.Kill()
	nodes := func(typ string) map[string]bool {
		out := map[string]bool{}
		rc.mu.Lock()
		defer rc.mu.Unlock()
		for _, d := range ofType(rc.got, typ) {
			data, _ := d.raw["data"].(map[string]any)
			node, _ := data["node"].(string)
			out[node] = true
		}
		return out
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(nodes(notify.BreakerOpened)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("breaker.opened from %v, want both nodes", nodes(notify.BreakerOpened))
		}
		for _, pub := range pubs {
			visitorWaits(t, pub)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for node := range nodes(notify.BreakerOpened) {
		if node == "" {
			t.Error("breaker.opened names no node")
		}
	}
	rd.Start()
	deadline = time.Now().Add(20 * time.Second)
	for len(nodes(notify.BreakerClosed)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("breaker.closed from %v, want both nodes", nodes(notify.BreakerClosed))
		}
		for _, pub := range pubs {
			visitorWaits(t, pub)
		}
		time.Sleep(200 * time.Millisecond)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, d := range rc.got {
		if d.sigErr != nil {
			t.Errorf("%s: %v", d.event.Type, d.sigErr)
		}
	}
}

// TestE2EWebhooksRuntimeRedis runs two nodes (the binary) on one real
// redis-server, neither with a webhook in its file: a webhook set through
// node 1's admin API is in force on node 2 within a couple of seconds
// (GET /api/v1/webhooks there lists it), and node 2 delivers it events
// signed with the secret set through node 1: a queue_all switched on
// through node 2 is sent by node 2 alone as room.settings_changed.
func TestE2EWebhooksRuntimeRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	rd := redistest.StartServer(t)
	rc := newReceiver(t, 0)
	origin := httptest.NewServer(bench.NewOrigin("webhook shop"))
	t.Cleanup(origin.Close)
	dir := t.TempDir()
	fileConfig := webhookRedisConfig[:strings.Index(webhookRedisConfig, "    webhooks:")]
	var adms []string
	for i := range 2 {
		pub, adm := freeAddr(t), freeAddr(t)
		path := filepath.Join(dir, fmt.Sprintf("node%d.yaml", i))
		body := fmt.Sprintf(fileConfig, pub, adm, rd.Addr(), origin.URL)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		startUsher(t, path, pub, "sale")
		adms = append(adms, adm)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	listed := func(adm string) string {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+adm+"/api/v1/webhooks?room=sale", nil)
		req.Header.Set("Authorization", "Bearer e2e-write")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := listed(adms[1]); strings.Contains(got, `"name":"ops"`) {
		t.Fatalf("node 2 has a webhook before any was set: %s", got)
	}
	one, two := admin.NewClient(adms[0], "e2e-write"), admin.NewClient(adms[1], "e2e-write")
	v, err := one.Room(ctx, "sale")
	if err != nil {
		t.Fatal(err)
	}
	hooks := []map[string]any{{"name": "ops", "url": rc.srv.URL + "/hook", "secret": webhookE2ESecret, "events": []string{"room.settings_changed"}}}
	if _, err := one.PatchRoom(ctx, "sale", v.ETag, map[string]any{"webhooks": hooks}); err != nil {
		t.Fatal(err)
	}
	set := time.Now()
	for !strings.Contains(listed(adms[1]), `"name":"ops"`) {
		if time.Since(set) > 5*time.Second {
			t.Fatalf("node 2 does not have the webhook set through node 1 after %s: %s", time.Since(set), listed(adms[1]))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the webhook set through node 1 was in force on node 2 after %s", time.Since(set).Round(time.Millisecond))
	if got := listed(adms[1]); strings.Contains(got, webhookE2ESecret) || strings.Contains(got, "/hook") {
		t.Errorf("node 2 shows the webhook's secret or path: %s", got)
	}
	v, err = two.Room(ctx, "sale")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := two.PatchRoom(ctx, "sale", v.ETag, map[string]any{"queue_all": true}); err != nil {
		t.Fatal(err)
	}
	got := rc.wait(t, 10*time.Second, "room.settings_changed from node 2", func(ds []delivery) bool {
		return len(ofType(ds, notify.SettingsChanged)) >= 1
	})
	time.Sleep(2 * time.Second) // any duplicate would have come by now
	rc.mu.Lock()
	got = append([]delivery(nil), rc.got...)
	rc.mu.Unlock()
	// Node 1 sent the change of the webhooks itself (room.settings_changed
	// of the webhooks, without the secret); node 2 the queue_all.
	var queueAll []delivery
	for _, d := range ofType(got, notify.SettingsChanged) {
		if d.sigErr != nil {
			t.Errorf("room.settings_changed: %v", d.sigErr)
		}
		if strings.Contains(string(d.body), webhookE2ESecret) || strings.Contains(string(d.body), "/hook") {
			t.Errorf("room.settings_changed shows the webhook's secret or path: %s", d.body)
		}
		if after, _ := d.raw["data"].(map[string]any)["after"].(map[string]any); after["queue_all"] == true {
			queueAll = append(queueAll, d)
		}
	}
	if len(queueAll) != 1 {
		t.Errorf("%d room.settings_changed of queue_all, want 1 (from node 2, which made the change); got %d deliveries", len(queueAll), len(got))
	}
}
