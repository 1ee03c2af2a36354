package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const hookRoom = `origin: http://127.0.0.1:3000
rooms:
  - id: sale
    total_active_users: 10
    new_users_per_minute: 10
    webhooks:
`

func TestWebhooksDecode(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hook.secret"), []byte("  0123456789abcdef-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "usher.yaml")
	body := hookRoom + `      - name: ops
        url: https://hooks.example/usher/T0K3N
        secret_file: hook.secret
        events: [queueing.*, room.settings_changed, visitor.admitted]
        visitor_events: 0.01
        timeout: 3s
        max_queue: 50
      - name: all
        url: http://127.0.0.1:9999/
        secret: 0123456789abcdef
`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Webhooks) != 2 {
		t.Fatalf("Webhooks = %+v, want 2", c.Webhooks)
	}
	w := c.Webhooks[0]
	if w.Room != "sale" || w.Name != "ops" || w.SecretValue() != "0123456789abcdef-file" || w.VisitorEvents != 0.01 ||
		w.Timeout.String() != "3s" || w.MaxQueue != 50 || len(w.Events) != 3 {
		t.Errorf("webhook 0 = %+v", w)
	}
	if got := c.Webhooks[1].SecretValue(); got != "0123456789abcdef" {
		t.Errorf("webhook 1 secret = %q", got)
	}
	var b strings.Builder
	if err := c.Explain(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, `Webhook "ops" gets queueing.*, room.settings_changed, visitor.admitted at https://hooks.example/…, signed; per-visitor events sampled at 1 %`) {
		t.Errorf("Explain does not describe the webhook:\n%s", out)
	}
	if strings.Contains(out, "T0K3N") || strings.Contains(out, "abcdef") {
		t.Errorf("Explain shows a secret:\n%s", out)
	}
	// A webhook changes live.
	next := *c
	next.Webhooks = nil
	if err := c.Reloadable(&next); err != nil {
		t.Errorf("Reloadable without webhooks: %v", err)
	}
}

func TestWebhooksInvalid(t *testing.T) {
	for _, tc := range []struct {
		name, hook, want string
	}{
		{"scheme", "{name: a, url: ftp://x.example/, secret: 0123456789abcdef}",
			`line 7: rooms[0] (sale): webhooks[0].url: must be an http or https URL, got scheme "ftp"`},
		{"relative", "{name: a, url: /hook, secret: 0123456789abcdef}",
			`webhooks[0].url: must be an http or https URL, got scheme ""`},
		{"no url", "{name: a, secret: 0123456789abcdef}", `webhooks[0].url: required`},
		{"empty secret", `{name: a, url: "http://x.example/", secret: ""}`,
			`webhooks[0].secret: required (set secret or secret_file): it signs every delivery`},
		{"short secret", `{name: a, url: "http://x.example/", secret: short}`,
			`webhooks[0].secret: must be at least 16 characters, got 5`},
		{"both secrets", `{name: a, url: "http://x.example/", secret: 0123456789abcdef, secret_file: f}`,
			`webhooks[0]: set secret or secret_file, not both`},
		{"unknown event", `{name: a, url: "http://x.example/", secret: 0123456789abcdef, events: [queueing.started, room.exploded]}`,
			`webhooks[0].events[1]: unknown event type "room.exploded"`},
		{"sample high", `{name: a, url: "http://x.example/", secret: 0123456789abcdef, events: [visitor.*], visitor_events: 1.5}`,
			`webhooks[0].visitor_events: must be from 0 to 1 (the share of per-visitor events sent), got 1.5`},
		{"sample negative", `{name: a, url: "http://x.example/", secret: 0123456789abcdef, events: [visitor.*], visitor_events: -0.1}`,
			`webhooks[0].visitor_events: must be from 0 to 1`},
		{"sample text", `{name: a, url: "http://x.example/", secret: 0123456789abcdef, visitor_events: lots}`,
			`webhooks[0].visitor_events: must be a number, got "lots"`},
		{"visitor without sample", `{name: a, url: "http://x.example/", secret: 0123456789abcdef, events: [visitor.admitted]}`,
			`webhooks[0].events[0]: visitor.admitted: per-visitor events are sampled: set visitor_events`},
		{"sample without visitor", `{name: a, url: "http://x.example/", secret: 0123456789abcdef, visitor_events: 0.5}`,
			`webhooks[0].visitor_events: is set, but events names no visitor event`},
		{"timeout", `{name: a, url: "http://x.example/", secret: 0123456789abcdef, timeout: 2m}`,
			`webhooks[0].timeout: must be from 1s to 30s, got 2m`},
		{"queue", `{name: a, url: "http://x.example/", secret: 0123456789abcdef, max_queue: 1000000}`,
			`webhooks[0].max_queue: must be from 1 to 100000, got 1000000`},
		{"name", `{name: "Ops Hook", url: "http://x.example/", secret: 0123456789abcdef}`,
			`webhooks[0].name: must be 1 to 32 of a-z, 0-9`},
		{"metadata", `{name: a, url: "http://169.254.169.254/latest/meta-data/", secret: 0123456789abcdef}`,
			`webhooks[0].url: must not point at 169.254.169.254, a link-local address (where cloud metadata services answer): deliveries there are refused`},
		{"link-local v6", `{name: a, url: "http://[fe80::1]:8080/", secret: 0123456789abcdef}`,
			`webhooks[0].url: must not point at fe80::1, a link-local address`},
		{"mapped metadata", `{name: a, url: "http://[::ffff:169.254.169.254]/", secret: 0123456789abcdef}`,
			`webhooks[0].url: must not point at ::ffff:169.254.169.254, a link-local address`},
		{"aws v6 metadata", `{name: a, url: "http://[fd00:ec2::254]/", secret: 0123456789abcdef}`,
			`webhooks[0].url: must not point at fd00:ec2::254, AWS's metadata service (IPv6)`},
		{"nat64 metadata", `{name: a, url: "http://[64:ff9b::a9fe:a9fe]/", secret: 0123456789abcdef}`,
			`webhooks[0].url: must not point at 64:ff9b::a9fe:a9fe, a NAT64 address embedding 169.254.169.254, a link-local address`},
		{"6to4 metadata", `{name: a, url: "http://[2002:a9fe:a9fe::1]/", secret: 0123456789abcdef}`,
			`webhooks[0].url: must not point at 2002:a9fe:a9fe::1, a 6to4 address embedding 169.254.169.254`},
		{"teredo client metadata", `{name: a, url: "http://[2001:0:4136:e378:8000:63bf:5601:5601]/", secret: 0123456789abcdef}`,
			`webhooks[0].url: must not point at 2001:0:4136:e378:8000:63bf:5601:5601, a Teredo address (its client) embedding 169.254.169.254`},
		{"alibaba metadata", `{name: a, url: "http://100.100.100.200/latest/meta-data/", secret: 0123456789abcdef}`,
			`webhooks[0].url: must not point at 100.100.100.200, the shared address space 100.64.0.0/10`},
		{"azure wireserver", `{name: a, url: "http://168.63.129.16/", secret: 0123456789abcdef}`,
			`webhooks[0].url: must not point at 168.63.129.16, Azure's wireserver`},
		{"oracle metadata", `{name: a, url: "http://192.0.0.192/opc/v2/", secret: 0123456789abcdef}`,
			`webhooks[0].url: must not point at 192.0.0.192, Oracle Cloud's metadata service`},
		{"gcp metadata name", `{name: a, url: "http://Metadata.Google.Internal./computeMetadata/v1/", secret: 0123456789abcdef}`,
			`webhooks[0].url: must not point at Metadata.Google.Internal., a cloud metadata service's name: deliveries there are refused`},
		{"unspecified", `{name: a, url: "http://0.0.0.0:9000/", secret: 0123456789abcdef}`,
			`webhooks[0].url: must not point at 0.0.0.0, an unspecified address`},
		{"unknown field", `{name: a, url: "http://x.example/", secret: 0123456789abcdef, retries: 3}`,
			`webhooks[0]: unknown field "retries"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(hookRoom + "      - " + tc.hook + "\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse = %v, want %q", err, tc.want)
			}
		})
	}
	_, err := Parse(strings.NewReader(hookRoom + "      - {name: a, url: \"http://x.example/\", secret: 0123456789abcdef}\n      - {name: a, url: \"http://y.example/\", secret: 0123456789abcdef}\n"))
	if err == nil || !strings.Contains(err.Error(), "webhooks[1].name: same as webhooks[0] of the room") {
		t.Errorf("Parse with two webhooks of one name = %v", err)
	}
}

// TestWebhooksAtRuntime: a runtime override replaces a room's webhooks
// as a whole, checked as the file's are, never with secret_file; the
// other rooms' webhooks stay; shown, they never show a secret or a path.
func TestWebhooksAtRuntime(t *testing.T) {
	if ok, why := OverridableField("webhooks"); !ok {
		t.Fatalf("OverridableField(webhooks) = false, %q", why)
	}
	if ok, _ := OverridableField("webhooks.secret"); ok {
		t.Fatal("OverridableField(webhooks.secret) = true, want a whole list only")
	}
	body := strings.Replace(hookRoom, "rooms:\n", "rooms:\n  - id: first\n    total_active_users: 1\n    new_users_per_minute: 1\n    routes: [{path: /f}]\n    cookie_suffix: f\n    webhooks: [{name: f, url: \"http://f.example/\", secret: ffffffffffffffff}]\n", 1) +
		"      - {name: old, url: \"http://old.example/\", secret: 0123456789abcdef}\n"
	c, err := Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	rt := &Runtime{}
	rt.SetRoom("sale", overrides(map[string]string{"webhooks": `[{"name":"ops","url":"https://hooks.example/p/TOKEN?k=Q","secret":"runtime-secret-0123","events":["queueing.*"],"timeout":"3s","max_queue":9}]`}))
	eff, err := c.WithRuntime(rt)
	if err != nil {
		t.Fatal(err)
	}
	if len(eff.Webhooks) != 2 || eff.Webhooks[0].Name != "f" || eff.Webhooks[0].Room != "first" {
		t.Fatalf("webhooks %+v, want first's f then sale's ops", eff.Webhooks)
	}
	w := eff.Webhooks[1]
	if w.Room != "sale" || w.Name != "ops" || w.SecretValue() != "runtime-secret-0123" || w.Timeout != 3*time.Second || w.MaxQueue != 9 {
		t.Errorf("runtime webhook %+v", w)
	}
	if len(c.Webhooks) != 2 || c.Webhooks[1].Name != "old" {
		t.Errorf("the file's config changed: %+v", c.Webhooks)
	}
	shown, _ := json.Marshal(eff.EncodeWebhooks("sale"))
	if want := `[{"events":["queueing.*"],"max_queue":9,"name":"ops","secret":"(set)","timeout":"3s","url":"https://hooks.example/…"}]`; string(shown) != want {
		t.Errorf("EncodeWebhooks = %s, want %s", shown, want)
	}
	for _, tc := range []struct{ name, value, want string }{
		{"secret_file", `[{"name":"a","url":"http://x.example/","secret_file":"/etc/passwd"}]`, "rooms[1] (sale): webhooks[0].secret_file: cannot be set at runtime"},
		{"url", `[{"name":"a","url":"ftp://x.example/SECRETPATH","secret":"0123456789abcdef"}]`, "rooms[1] (sale): webhooks[0].url: must be an http or https URL"},
		{"short secret", `[{"name":"a","url":"http://x.example/","secret":"short"}]`, "rooms[1] (sale): webhooks[0].secret: must be at least 16 characters, got 5"},
		{"no secret", `[{"name":"a","url":"http://x.example/"}]`, "rooms[1] (sale): webhooks[0].secret: required"},
		{"duplicate", `[{"name":"a","url":"http://x.example/","secret":"0123456789abcdef"},{"name":"a","url":"http://y.example/","secret":"0123456789abcdef"}]`, "rooms[1] (sale): webhooks[1].name: same as webhooks[0]"},
		{"not a list", `{"name":"a"}`, "rooms[1] (sale): webhooks: must be a list"},
	} {
		rt := &Runtime{}
		rt.SetRoom("sale", overrides(map[string]string{"webhooks": tc.value}))
		_, err := c.WithRuntime(rt)
		var v *ValidationError
		if !errors.As(err, &v) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: WithRuntime = %v, want %q", tc.name, err, tc.want)
			continue
		}
		for _, secret := range []string{"SECRETPATH", "/etc/passwd"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error shows %q: %v", tc.name, secret, err)
			}
		}
	}
	rt.SetRoom("sale", overrides(map[string]string{"webhooks": `[]`}))
	if eff, err := c.WithRuntime(rt); err != nil || len(eff.Webhooks) != 1 || eff.Webhooks[0].Room != "first" {
		t.Errorf("an empty list: %v, %+v; want the room without webhooks", err, eff)
	}
}

func TestWebhookTarget(t *testing.T) {
	for in, want := range map[string]string{
		"https://hooks.slack.example/services/T0/B0/SECRET": "https://hooks.slack.example/…",
		"http://user:pw@10.0.0.1:8080/":                     "http://10.0.0.1:8080/",
		"http://x.example":                                  "http://x.example/",
	} {
		if got := WebhookTarget(in); got != want {
			t.Errorf("WebhookTarget(%q) = %q, want %q", in, got, want)
		}
	}
}
