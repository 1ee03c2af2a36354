package config

import (
	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher"
)

// The YAML fields of each part of the config, mapped to the Go fields they
// fill. Each part starts from its defaults, so a field left out (or null)
// keeps its default and a field written keeps what is written, even zero.

// config decodes the document root into c.
func (d *decoder) config(n *yaml.Node, c *Config) {
	d.mapping(n, loc{}, map[string]field{
		"listen":          d.text(&c.Listen),
		"origin":          d.text(&c.Origin),
		"trusted_proxies": d.texts(&c.TrustedProxies),
		"admin": func(n *yaml.Node, at loc) {
			d.mapping(n, at, map[string]field{
				"listen":     d.text(&c.Admin.Listen),
				"token":      d.text(&c.Admin.Token),
				"token_file": d.text(&c.Admin.TokenFile),
			})
		},
		"store": func(n *yaml.Node, at loc) {
			d.mapping(n, at, map[string]field{
				"embedded": func(n *yaml.Node, at loc) {
					d.mapping(n, at, map[string]field{
						"path": d.text(&c.Store.Embedded.Path),
					})
				},
			})
		},
		"keys": func(n *yaml.Node, at loc) {
			d.list(n, at, func(n *yaml.Node, at loc) {
				c.Keys = append(c.Keys, d.key(n, at))
			})
		},
		"rooms": func(n *yaml.Node, at loc) {
			d.list(n, at, func(n *yaml.Node, at loc) {
				c.Rooms = append(c.Rooms, d.room(n, at))
			})
		},
	})
}

// key decodes one entry of keys.
func (d *decoder) key(n *yaml.Node, at loc) Key {
	var k Key
	d.mapping(n, at, map[string]field{
		"id":          d.text(&k.ID),
		"secret":      d.text(&k.Secret),
		"secret_file": d.text(&k.SecretFile),
	})
	return k
}

// room decodes one entry of rooms over the default room. Problems inside it
// name the room by its id, looked up first.
func (d *decoder) room(n *yaml.Node, at loc) usher.Room {
	r := defaultRoom()
	if id := lookup(n, "id"); id != nil && id.Kind == yaml.ScalarNode {
		at.room = id.Value
	}
	s := &r.Settings
	d.mapping(n, at, map[string]field{
		"id":     d.text(&r.ID),
		"name":   d.text(&r.Name),
		"origin": d.text(&r.Origin),
		"routes": func(n *yaml.Node, at loc) {
			r.Routes = nil
			d.list(n, at, func(n *yaml.Node, at loc) {
				r.Routes = append(r.Routes, d.route(n, at))
			})
		},
		"path_case_sensitive":     d.boolean(&r.PathCaseSensitive),
		"total_active_users":      d.integer(&s.TotalActiveUsers),
		"new_users_per_minute":    d.integer(&s.NewUsersPerMinute),
		"session_duration":        d.duration(&s.SessionDuration),
		"disable_session_renewal": d.boolean(&s.DisableSessionRenewal),
		"queueing_method":         d.text((*string)(&s.QueueingMethod)),
		"queue_all":               d.boolean(&s.QueueAll),
		"suspended":               d.boolean(&s.Suspended),
		"queueing_status_code":    d.integer(&s.QueueingStatusCode),
		"json_response_enabled":   d.boolean(&s.JSONResponseEnabled),
		"cookie_suffix":           d.text(&s.CookieSuffix),
		"cookie_attributes": func(n *yaml.Node, at loc) {
			d.mapping(n, at, map[string]field{
				"samesite": d.text(&s.CookieAttributes.SameSite),
				"secure":   d.text(&s.CookieAttributes.Secure),
			})
		},
		"custom_page_html":          d.text(&s.CustomPageHTML),
		"default_template_language": d.text(&s.DefaultTemplateLanguage),
		"refresh_interval":          d.duration(&s.RefreshInterval),
	})
	return r
}

// route decodes one entry of a room's routes; path defaults to "/".
func (d *decoder) route(n *yaml.Node, at loc) usher.Route {
	rt := usher.Route{Path: "/"}
	d.mapping(n, at, map[string]field{
		"host": d.text(&rt.Host),
		"path": d.text(&rt.Path),
	})
	return rt
}
