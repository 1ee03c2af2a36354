package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/admin"
	"github.com/usherhq/usher/internal/bench"
)

// metadataForms are 169.254.169.254, the cloud metadata address, in the
// eleven forms of attack 10 of issue 21 (seven of which usher took before
// it unwrapped IPv4 addresses carried in IPv6 ones), and the other
// clouds' metadata and control addresses.
var metadataForms = []string{
	"169.254.169.254",
	"[::ffff:169.254.169.254]",               // v4-mapped
	"[::169.254.169.254]",                    // v4-compatible
	"[::ffff:0:169.254.169.254]",             // v4-translated
	"[64:ff9b::a9fe:a9fe]",                   // NAT64
	"[64:ff9b:1::a9fe:a9fe]",                 // NAT64 local use, /96 layout
	"[64:ff9b:1:a9fe:a9:fea9::]",             // NAT64 local use, /48 layout
	"[2002:a9fe:a9fe::1]",                    // 6to4
	"[2001:0:a9fe:a9fe::1]",                  // Teredo server
	"[2001:0:4136:e378:8000:63bf:5601:5601]", // Teredo client (inverted)
	"[fe80::a9fe:a9fe]",                      // OpenStack's IPv6 metadata
	"100.100.100.200",                        // Alibaba Cloud
	"168.63.129.16",                          // Azure wireserver
	"192.0.0.192",                            // Oracle Cloud
	"[fd00:ec2::254]",                        // AWS IPv6
	"[fd20:ce::254]",                         // Google Cloud IPv6
	"metadata.google.internal",               // Google Cloud by name
}

// TestE2EWebhookTargets: a webhook pointed at a cloud metadata service,
// in any of the forms above, is refused by the real binary: `usher check`
// fails on a config file naming it, with the field and the reason, and a
// running usher's admin API refuses to set it at runtime (422, the field
// named) and keeps the webhooks it had. Connecting to such an address
// when a DNS name resolves to it is refused by the webhook transport
// (internal/notify's TestGuardedTransportRefuses).
func TestE2EWebhookTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	origin := httptest.NewServer(bench.NewOrigin("targets shop"))
	t.Cleanup(origin.Close)
	rc := newReceiver(t, 0)
	dir := t.TempDir()
	pub, adm := freeAddr(t), freeAddr(t)
	config := func(url string) string {
		return fmt.Sprintf(webhookE2EConfig, pub, adm, filepath.Join(dir, "data"), origin.URL, url, webhookE2ESecret)
	}

	var accepted []string
	for i, host := range metadataForms {
		url := "http://" + host + "/latest/meta-data/"
		path := filepath.Join(dir, fmt.Sprintf("check%d.yaml", i))
		if err := os.WriteFile(path, []byte(config(url)), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(usherBinary(t), "check", "--config", path).CombinedOutput()
		if err == nil {
			accepted = append(accepted, host)
			continue
		}
		if !strings.Contains(string(out), "webhooks[0].url: must not point at") {
			t.Errorf("usher check with a webhook to %s: %v, output lacks the field and reason:\n%s", host, err, out)
		}
	}
	if len(accepted) > 0 {
		t.Errorf("usher check accepted webhooks to %d of %d metadata targets: %s", len(accepted), len(metadataForms), strings.Join(accepted, " "))
	}

	path := filepath.Join(dir, "usher.yaml")
	if err := os.WriteFile(path, []byte(config(rc.srv.URL+"/hooks/usher")), 0o600); err != nil {
		t.Fatal(err)
	}
	startUsher(t, path, pub, "sale")
	c := admin.NewClient(adm, "e2e-write")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	accepted = accepted[:0]
	for _, host := range metadataForms {
		v, err := c.Room(ctx, "sale")
		if err != nil {
			t.Fatal(err)
		}
		hooks := []map[string]any{{"name": "probe", "url": "http://" + host + "/latest/meta-data/", "secret": webhookE2ESecret}}
		_, err = c.PatchRoom(ctx, "sale", v.ETag, map[string]any{"webhooks": hooks})
		if err == nil {
			accepted = append(accepted, host)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "url") || !strings.Contains(msg, "must not point at") {
			t.Errorf("PATCH webhooks to %s: %v, want the url field named and why", host, err)
		}
	}
	if len(accepted) > 0 {
		t.Errorf("the admin API set webhooks to %d of %d metadata targets: %s", len(accepted), len(metadataForms), strings.Join(accepted, " "))
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+adm+"/api/v1/webhooks", nil)
	req.Header.Set("Authorization", "Bearer e2e-read")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	listed := string(b)
	if !strings.Contains(listed, `"name":"ops"`) || strings.Contains(listed, `"name":"probe"`) {
		t.Errorf("webhooks in force after the refusals: %s, want ops alone", listed)
	}
}
