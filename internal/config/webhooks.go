package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/notify"
)

// Webhook is one webhook of a room (rooms[].webhooks[] in the file): the
// room's events, POSTed as signed JSON to URL. A room's webhooks are set
// in the file or, as a whole list, at runtime (then with Secret, never
// SecretFile); their secrets are never shown (EncodeWebhooks).
type Webhook struct {
	// Room is the id of the room the webhook is in.
	Room string
	// Name names the webhook in metrics and logs: 1 to 32 of a-z, 0-9,
	// '_' and '-', starting with a letter or digit; unique in its room.
	Name string
	// URL receives the events: absolute http or https, without a
	// fragment.
	URL string
	// Secret signs every delivery (HMAC-SHA256); at least 16 characters.
	// Set Secret or SecretFile, not both.
	Secret string
	// SecretFile is a file holding the secret (surrounding white space is
	// ignored), relative to the config file's directory; Load reads it.
	SecretFile string
	// Events are the event types it gets (notify.Types; a family as
	// "queueing.*"). Empty: every room event; per-visitor events must be
	// named and need VisitorEvents.
	Events []string
	// VisitorEvents is the share of per-visitor events sent, 0 to 1.
	// Zero: none.
	VisitorEvents float64
	// Timeout bounds one delivery attempt (zero: 5s); 1s to 30s.
	Timeout time.Duration
	// MaxQueue bounds the events waiting for delivery (zero: 1000); 1 to
	// 100000. Beyond it events are dropped and counted.
	MaxQueue int

	roomIndex, index int    // where it is in the file
	fileSecret       string // SecretFile's content, read by Load
	secretRead       bool   // whether Load read SecretFile
}

// Bounds of webhooks.
const (
	maxWebhooksPerRoom = 16
	minWebhookSecret   = 16
	maxWebhookQueue    = 100_000
	minWebhookTimeout  = time.Second
	maxWebhookTimeout  = 30 * time.Second
)

// SecretValue returns Secret, or SecretFile's content once Load read it;
// "" when neither is known.
func (w *Webhook) SecretValue() string {
	if w.Secret != "" {
		return w.Secret
	}
	return w.fileSecret
}

// loc returns the webhook's place in the file.
func (w *Webhook) loc() loc {
	return roomLoc(w.roomIndex, w.Room).field("webhooks").index(w.index)
}

// webhooks decodes a room's webhooks, appending them to dst.
func (d *decoder) webhooks(dst *[]Webhook, roomIndex int) field {
	return func(n *yaml.Node, at loc) {
		i := 0
		d.list(n, at, func(n *yaml.Node, at loc) {
			w := Webhook{roomIndex: roomIndex, index: i}
			i++
			d.mapping(n, at, map[string]field{
				"name":           d.text(&w.Name),
				"url":            d.text(&w.URL),
				"secret":         d.text(&w.Secret),
				"secret_file":    d.secretFile(&w.SecretFile),
				"events":         d.texts(&w.Events),
				"visitor_events": d.number(&w.VisitorEvents),
				"timeout":        d.duration(&w.Timeout),
				"max_queue":      d.integer(&w.MaxQueue),
			})
			*dst = append(*dst, w)
		})
	}
}

// secretFile decodes a webhook's secret_file, which only the file may
// set: a path on each node means nothing to the admin API.
func (d *decoder) secretFile(dst *string) field {
	if !d.runtime {
		return d.text(dst)
	}
	return func(n *yaml.Node, at loc) {
		d.problems.add(n.Line, at, "cannot be set at runtime (a path on each node): send the secret itself in secret, or set secret_file in the config file")
	}
}

// replaceWebhooks returns hooks with the webhooks of the room at index
// room replaced by set, each placed as the file would place it.
func replaceWebhooks(hooks []Webhook, room int, id string, set []Webhook) []Webhook {
	out := make([]Webhook, 0, len(hooks)+len(set))
	at := -1
	for _, w := range hooks {
		if w.roomIndex == room {
			continue
		}
		if at < 0 && w.roomIndex > room {
			at = len(out)
		}
		out = append(out, w)
	}
	if at < 0 {
		at = len(out)
	}
	for j := range set {
		set[j].Room, set[j].roomIndex, set[j].index = id, room, j
	}
	return slices.Insert(out, at, set...)
}

// SecretShown is what EncodeWebhooks shows for a secret that is set.
const SecretShown = "(set)"

// EncodeWebhooks returns the webhooks of a room as the file writes them,
// with nothing secret: the secret as "(set)", the URL as scheme and host
// (its path and query may carry tokens). Never nil.
func (c *Config) EncodeWebhooks(room string) []any {
	out := make([]any, 0)
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		if w.Room != room {
			continue
		}
		m := map[string]any{"name": w.Name, "url": WebhookTarget(w.URL)}
		if w.SecretFile != "" {
			m["secret_file"] = SecretShown
		} else {
			m["secret"] = SecretShown
		}
		if len(w.Events) > 0 {
			m["events"] = slices.Clone(w.Events)
		}
		if w.VisitorEvents != 0 {
			m["visitor_events"] = w.VisitorEvents
		}
		if w.Timeout != 0 {
			m["timeout"] = formatDuration(w.Timeout)
		}
		if w.MaxQueue != 0 {
			m["max_queue"] = w.MaxQueue
		}
		out = append(out, m)
	}
	return out
}

// RoomWebhooks returns the webhooks of a room.
func (c *Config) RoomWebhooks(room string) []Webhook {
	var out []Webhook
	for _, w := range c.Webhooks {
		if w.Room == room {
			out = append(out, w)
		}
	}
	return out
}

// number decodes an integer or a decimal number into dst.
func (d *decoder) number(dst *float64) field {
	return func(n *yaml.Node, at loc) {
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
			d.problems.add(n.Line, at, "must be a number, got %s", describe(n))
			return
		}
		v, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			d.problems.add(n.Line, at, "must be a number, got %s", describe(n))
			return
		}
		*dst = v
	}
}

var webhookNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// checkWebhooks checks every room's webhooks.
func (c *Config) checkWebhooks(r *report) {
	names := make(map[string]int)
	perRoom := make(map[int]int)
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		at := w.loc()
		if perRoom[w.roomIndex]++; perRoom[w.roomIndex] == maxWebhooksPerRoom+1 {
			r.add(0, roomLoc(w.roomIndex, w.Room).field("webhooks"), "at most %d webhooks a room", maxWebhooksPerRoom)
		}
		key := strconv.Itoa(w.roomIndex) + "\x00" + w.Name
		switch first, dup := names[key]; {
		case !webhookNamePattern.MatchString(w.Name):
			r.add(0, at.field("name"), "must be 1 to 32 of a-z, 0-9, '_' and '-', starting with a letter or digit, got %q", w.Name)
		case dup:
			r.add(0, at.field("name"), "same as webhooks[%d] of the room", first)
		default:
			names[key] = w.index
		}
		if msg := checkWebhookURL(w.URL); msg != "" {
			r.add(0, at.field("url"), "%s", msg)
		}
		switch {
		case w.Secret != "" && w.SecretFile != "":
			r.add(0, at, "set secret or secret_file, not both")
		case w.Secret == "" && w.SecretFile == "":
			r.add(0, at.field("secret"), "required (set secret or secret_file): it signs every delivery")
		case w.Secret != "" && len(w.Secret) < minWebhookSecret:
			r.add(0, at.field("secret"), "must be at least %d characters, got %d", minWebhookSecret, len(w.Secret))
		case w.secretRead && len(w.fileSecret) < minWebhookSecret:
			r.add(0, at.field("secret_file"), "%s must hold at least %d characters, got %d", w.SecretFile, minWebhookSecret, len(w.fileSecret))
		}
		visitorNamed := false
		for j, e := range w.Events {
			if !notify.ValidPattern(e) {
				r.add(0, at.field("events").index(j), "unknown event type %q (known: %s; a family as queueing.*)", e, strings.Join(notify.Types(), ", "))
				continue
			}
			if slices.ContainsFunc(notify.Types(), func(t string) bool { return notify.VisitorType(t) && notify.MatchType(e, t) && e != "*" }) {
				visitorNamed = true
				if w.VisitorEvents == 0 {
					r.add(0, at.field("events").index(j), "%s: per-visitor events are sampled: set visitor_events, the share to send (0.01 is 1 %%)", e)
				}
			}
		}
		switch v := w.VisitorEvents; {
		case !(v >= 0 && v <= 1):
			r.add(0, at.field("visitor_events"), "must be from 0 to 1 (the share of per-visitor events sent), got %v", v)
		case v > 0 && !visitorNamed:
			r.add(0, at.field("visitor_events"), "is set, but events names no visitor event: add visitor.* or the ones wanted to events")
		}
		if t := w.Timeout; t != 0 && (t < minWebhookTimeout || t > maxWebhookTimeout) {
			r.add(0, at.field("timeout"), "must be from %s to %s, got %s", formatDuration(minWebhookTimeout), formatDuration(maxWebhookTimeout), formatDuration(t))
		}
		if q := w.MaxQueue; q != 0 && (q < 1 || q > maxWebhookQueue) {
			r.add(0, at.field("max_queue"), "must be from 1 to %d, got %d", maxWebhookQueue, q)
		}
	}
}

// checkWebhookURL says what is wrong with a webhook's URL, or "".
func checkWebhookURL(s string) string {
	if s == "" {
		return "required"
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "must be an absolute http or https URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("must be an http or https URL, got scheme %q", u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return "must name a host, like https://hooks.example/usher"
	case u.Fragment != "" || strings.Contains(s, "#"):
		return "must not have a fragment (#...)"
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil {
		if why := notify.ForbiddenTarget(a); why != "" {
			return fmt.Sprintf("must not point at %s, %s: deliveries there are refused", a, why)
		}
	}
	if why := notify.ForbiddenName(u.Hostname()); why != "" {
		return fmt.Sprintf("must not point at %s, %s: deliveries there are refused", u.Hostname(), why)
	}
	return ""
}

// readWebhookSecrets reads the secret_file of each webhook, relative to
// dir.
func (c *Config) readWebhookSecrets(dir string) report {
	var r report
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		if w.SecretFile == "" {
			continue
		}
		switch s, err := readSecretFile(dir, w.SecretFile); {
		case err != nil:
			r.add(0, w.loc().field("secret_file"), "%v", err)
		case s == "":
			r.add(0, w.loc().field("secret_file"), "%s is empty", w.SecretFile)
		default:
			w.fileSecret, w.secretRead = s, true
		}
	}
	return r
}

// WebhookTarget shows a webhook's URL without what may be secret in it
// (user info, path, query): scheme and host.
func WebhookTarget(raw string) string { return notify.Target(raw) }

// explainWebhook says in words what a webhook gets.
func explainWebhook(w *Webhook) string {
	what := "every room event"
	if len(w.Events) > 0 {
		what = strings.Join(w.Events, ", ")
	}
	s := fmt.Sprintf("Webhook %q gets %s at %s, signed", w.Name, what, WebhookTarget(w.URL))
	if w.VisitorEvents > 0 {
		s += fmt.Sprintf("; per-visitor events sampled at %s", strconv.FormatFloat(w.VisitorEvents*100, 'f', -1, 64)+" %")
	}
	q := w.MaxQueue
	if q == 0 {
		q = notify.DefaultMaxQueue
	}
	return s + fmt.Sprintf("; up to %d events queued, more are dropped and counted.", q)
}

// hooksOfRoom returns the rooms' webhooks for explain, keyed by id.
func hooksOfRoom(c *Config, rm *usher.Room) []*Webhook {
	var out []*Webhook
	for i := range c.Webhooks {
		if c.Webhooks[i].Room == rm.ID {
			out = append(out, &c.Webhooks[i])
		}
	}
	return out
}
