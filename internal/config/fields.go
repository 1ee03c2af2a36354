package config

import (
	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/rules"
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
				"tokens":     d.adminTokens(&c.Admin.Tokens),
			})
		},
		"store": func(n *yaml.Node, at loc) {
			d.mapping(n, at, map[string]field{
				"embedded": func(n *yaml.Node, at loc) {
					d.mapping(n, at, map[string]field{
						"path": d.text(&c.Store.Embedded.Path),
					})
				},
				"redis": func(n *yaml.Node, at loc) {
					rd := &Redis{}
					c.Store.Redis = rd
					d.mapping(n, at, map[string]field{
						"addrs":         d.texts(&rd.Addrs),
						"username":      d.text(&rd.Username),
						"password":      d.text(&rd.Password),
						"password_file": d.text(&rd.PasswordFile),
						"db":            d.integer(&rd.DB),
						"tls":           d.redisTLS(rd),
						"sentinel":      d.sentinel(rd),
						"cluster":       d.boolean(&rd.Cluster),
						"key_prefix":    d.text(&rd.KeyPrefix),
						"fail_mode":     d.text(&rd.FailMode),
						"timeout":       d.duration(&rd.Timeout),
						"wait_replicas": d.integer(&rd.WaitReplicas),
						"clock_slack":   optional(d, d.duration, &rd.ClockSlack),
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
				c.Rooms = append(c.Rooms, d.room(n, at, len(c.Rooms), &c.Webhooks))
			})
		},
		"unknown_hosts": d.text(&c.UnknownHosts),
		"forward_auth": func(n *yaml.Node, at loc) {
			d.mapping(n, at, map[string]field{
				"listen": d.text(&c.ForwardAuth.Listen),
			})
		},
		"admission_token": func(n *yaml.Node, at loc) {
			at2 := &c.AdmissionToken
			enabled := true
			d.mapping(n, at, map[string]field{
				"enabled": d.boolean(&enabled),
				"header":  d.text(&at2.Header),
				"ttl":     d.duration(&at2.TTL),
				"issuer":  d.text(&at2.Issuer),
			})
			at2.Disabled = !enabled
		},
		"ip_lists":       d.ipLists(&c.IPListEntries),
		"country_header": d.text(&c.CountryHeader),
		"watch_config":   d.boolean(&c.WatchConfig),
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

// room decodes the i-th entry of rooms over the default room, appending
// its webhooks (kept in Config.Webhooks, not in the room's settings) to
// hooks. Problems inside it name the room by its id, looked up first.
func (d *decoder) room(n *yaml.Node, at loc, i int, hooks *[]Webhook) usher.Room {
	r := defaultRoom()
	if id := lookup(n, "id"); id != nil && id.Kind == yaml.ScalarNode {
		at.room = id.Value
	}
	fields := d.roomFields(&r)
	first := len(*hooks)
	fields["webhooks"] = d.webhooks(hooks, i)
	d.mapping(n, at, fields)
	for j := first; j < len(*hooks); j++ {
		(*hooks)[j].Room = r.ID
	}
	return r
}

// roomFields returns the fields of a room, each decoding into r. Decoding
// them over a room that has values already (a runtime override over the
// file's room) replaces what is written: a list or a block as a whole,
// cookie_attributes key by key.
func (d *decoder) roomFields(r *usher.Room) map[string]field {
	s := &r.Settings
	return map[string]field{
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
		"custom_page_html":          d.page(&s.CustomPageHTML),
		"default_template_language": d.text(&s.DefaultTemplateLanguage),
		"refresh_interval":          d.duration(&s.RefreshInterval),
		"max_refresh_interval":      d.duration(&s.MaxRefreshInterval),
		"client_limit":              d.clientLimit(&s.ClientLimit),
		"proof_of_work":             d.proofOfWork(&s.ProofOfWork),
		"autopilot":                 d.autopilot(&s.Autopilot),
		"shards":                    d.integer(&s.Shards),
		"ticket_binding": func(n *yaml.Node, at loc) {
			b := &r.TicketBinding
			*b = usher.TicketBinding{IPv4Prefix: 24, IPv6Prefix: 48}
			d.mapping(n, at, map[string]field{
				"client_prefix": d.boolean(&b.ClientPrefix),
				"user_agent":    d.boolean(&b.UserAgent),
				"ipv4_prefix":   d.integer(&b.IPv4Prefix),
				"ipv6_prefix":   d.integer(&b.IPv6Prefix),
			})
			if !b.On() {
				// Keep the block's presence known to Validate.
				b.IPv4Prefix = -1
			}
		},
		"events": func(n *yaml.Node, at loc) {
			r.Events = nil
			d.list(n, at, func(n *yaml.Node, at loc) {
				r.Events = append(r.Events, d.event(n, at))
			})
		},
		"rules": func(n *yaml.Node, at loc) {
			r.Rules = nil
			d.list(n, at, func(n *yaml.Node, at loc) {
				r.Rules = append(r.Rules, d.rule(n, at))
			})
		},
	}
}

// event decodes one entry of a room's events. Problems inside it name the
// event by its name, looked up first. An override left out (or null) stays
// nil, so the event inherits the room's setting.
func (d *decoder) event(n *yaml.Node, at loc) usher.Event {
	var e usher.Event
	if name := lookup(n, "name"); name != nil && name.Kind == yaml.ScalarNode {
		at.event = name.Value
	}
	o := &e.Overrides
	d.mapping(n, at, map[string]field{
		"name":                      d.text(&e.Name),
		"prequeue_start_time":       d.timestamp(&e.PrequeueStart),
		"event_start_time":          d.timestamp(&e.Start),
		"event_end_time":            d.timestamp(&e.End),
		"shuffle_at_event_start":    d.boolean(&e.ShuffleAtStart),
		"draw_beacon":               d.text(&e.DrawBeacon),
		"total_active_users":        optional(d, d.integer, &o.TotalActiveUsers),
		"new_users_per_minute":      optional(d, d.integer, &o.NewUsersPerMinute),
		"session_duration":          optional(d, d.duration, &o.SessionDuration),
		"disable_session_renewal":   optional(d, d.boolean, &o.DisableSessionRenewal),
		"queueing_method":           optional(d, d.method, &o.QueueingMethod),
		"queue_all":                 optional(d, d.boolean, &o.QueueAll),
		"queueing_status_code":      optional(d, d.integer, &o.QueueingStatusCode),
		"json_response_enabled":     optional(d, d.boolean, &o.JSONResponseEnabled),
		"custom_page_html":          optional(d, d.page, &o.CustomPageHTML),
		"default_template_language": optional(d, d.text, &o.DefaultTemplateLanguage),
		"refresh_interval":          optional(d, d.duration, &o.RefreshInterval),
		"client_limit":              optional(d, d.clientLimit, &o.ClientLimit),
		"proof_of_work":             optional(d, d.proofOfWork, &o.ProofOfWork),
		"autopilot":                 optional(d, d.autopilot, &o.Autopilot),
	})
	return e
}

// clientLimit decodes client_limit over its defaults (a client is an IPv4
// /32 or an IPv6 /64; a network an IPv4 /24 or an IPv6 /48, with
// usher.NetworkMultiple times the client's limit; over_limit queue). The
// mapping turns the limit on: Validate requires new_visitors_per_minute
// in it.
func (d *decoder) clientLimit(dst *usher.ClientLimit) field {
	return func(n *yaml.Node, at loc) {
		*dst = usher.ClientLimit{IPv4Prefix: 32, IPv6Prefix: 64, OverLimit: "queue", NewVisitorsPerMinute: -1,
			NetworkIPv4Prefix: 24, NetworkIPv6Prefix: 48}
		d.mapping(n, at, map[string]field{
			"new_visitors_per_minute":         d.integer(&dst.NewVisitorsPerMinute),
			"ipv4_prefix":                     d.integer(&dst.IPv4Prefix),
			"ipv6_prefix":                     d.integer(&dst.IPv6Prefix),
			"network_new_visitors_per_minute": d.integer(&dst.NetworkNewVisitorsPerMinute),
			"network_ipv4_prefix":             d.integer(&dst.NetworkIPv4Prefix),
			"network_ipv6_prefix":             d.integer(&dst.NetworkIPv6Prefix),
			"over_limit":                      d.text(&dst.OverLimit),
		})
	}
}

// proofOfWork decodes proof_of_work; Validate requires difficulty in it.
func (d *decoder) proofOfWork(dst *usher.ProofOfWork) field {
	return func(n *yaml.Node, at loc) {
		*dst = usher.ProofOfWork{Difficulty: -1}
		d.mapping(n, at, map[string]field{
			"difficulty": d.integer(&dst.Difficulty),
			"always":     d.boolean(&dst.Always),
		})
	}
}

// rule decodes one entry of a room's rules: enabled defaults to true and
// action to bypass_waiting_room. Problems inside it name the rule by its
// description, looked up first.
func (d *decoder) rule(n *yaml.Node, at loc) usher.Rule {
	rl := usher.Rule{Action: rules.ActionBypass, Enabled: true}
	if desc := lookup(n, "description"); desc != nil && desc.Kind == yaml.ScalarNode {
		at.rule = desc.Value
	}
	d.mapping(n, at, map[string]field{
		"description": d.text(&rl.Description),
		"expression":  d.text(&rl.Expression),
		"action":      d.text(&rl.Action),
		"enabled":     d.boolean(&rl.Enabled),
	})
	return rl
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

// sentinel decodes store.redis.sentinel into rd.Sentinel.
func (d *decoder) sentinel(rd *Redis) field {
	return func(n *yaml.Node, at loc) {
		sen := &RedisSentinel{}
		rd.Sentinel = sen
		d.mapping(n, at, map[string]field{
			"master_name":   d.text(&sen.MasterName),
			"addrs":         d.texts(&sen.Addrs),
			"username":      d.text(&sen.Username),
			"password":      d.text(&sen.Password),
			"password_file": d.text(&sen.PasswordFile),
		})
	}
}

// redisTLS decodes store.redis.tls: true or false, or a mapping of TLS
// options that turns TLS on.
func (d *decoder) redisTLS(rd *Redis) field {
	return func(n *yaml.Node, at loc) {
		if n.Kind != yaml.MappingNode {
			if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&rd.TLS) != nil {
				d.problems.add(n.Line, at, "must be true, false or a mapping (ca_file, cert_file, key_file, server_name), got %s", describe(n))
			}
			return
		}
		t := &RedisTLS{}
		rd.TLS, rd.TLSOptions = true, t
		d.mapping(n, at, map[string]field{
			"ca_file":              d.text(&t.CAFile),
			"cert_file":            d.text(&t.CertFile),
			"key_file":             d.text(&t.KeyFile),
			"server_name":          d.text(&t.ServerName),
			"insecure_skip_verify": d.boolean(&t.InsecureSkipVerify),
		})
	}
}
