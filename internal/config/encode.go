package config

import "github.com/usherhq/usher"

// EncodeRoom returns a room's fields as the file writes them (the admin
// API shows and compares rooms this way): durations as "5m", times in
// RFC 3339, blocks that are off left out, custom pages as absolute paths
// once Load resolved them. Decoding the result (WithRuntime) gives the
// room back.
func EncodeRoom(r *usher.Room) map[string]any {
	s := &r.Settings
	routes := make([]any, 0, len(r.Routes))
	for _, rt := range r.Routes {
		m := map[string]any{"path": rt.Path}
		if rt.Host != "" {
			m["host"] = rt.Host
		}
		routes = append(routes, m)
	}
	m := map[string]any{
		"id":                      r.ID,
		"name":                    r.Name,
		"routes":                  routes,
		"path_case_sensitive":     r.PathCaseSensitive,
		"total_active_users":      s.TotalActiveUsers,
		"new_users_per_minute":    s.NewUsersPerMinute,
		"session_duration":        formatDuration(s.SessionDuration),
		"disable_session_renewal": s.DisableSessionRenewal,
		"queueing_method":         methodName(s.QueueingMethod),
		"queue_all":               s.QueueAll,
		"suspended":               s.Suspended,
		"json_response_enabled":   s.JSONResponseEnabled,
		"cookie_suffix":           s.CookieSuffix,
		"cookie_attributes": map[string]any{
			"samesite": s.CookieAttributes.SameSite,
			"secure":   s.CookieAttributes.Secure,
		},
		"refresh_interval": formatDuration(s.RefreshInterval),
		"events":           EncodeEvents(r.Events),
		"rules":            EncodeRules(r.Rules),
	}
	if r.Origin != "" {
		m["origin"] = r.Origin
	}
	if s.QueueingStatusCode != 0 {
		m["queueing_status_code"] = s.QueueingStatusCode
	}
	if s.Shards > 1 {
		m["shards"] = s.Shards
	}
	if s.MaxRefreshInterval != 0 {
		m["max_refresh_interval"] = formatDuration(s.MaxRefreshInterval)
	}
	if s.CustomPageHTML != "" {
		m["custom_page_html"] = s.CustomPageHTML
	}
	if s.DefaultTemplateLanguage != "" {
		m["default_template_language"] = s.DefaultTemplateLanguage
	}
	if s.ClientLimit != (usher.ClientLimit{}) {
		m["client_limit"] = encodeClientLimit(&s.ClientLimit)
	}
	if s.ProofOfWork != (usher.ProofOfWork{}) {
		m["proof_of_work"] = encodeProofOfWork(&s.ProofOfWork)
	}
	if s.Autopilot != (usher.Autopilot{}) {
		m["autopilot"] = encodeAutopilot(&s.Autopilot)
	}
	if b := &r.TicketBinding; b.On() {
		m["ticket_binding"] = map[string]any{
			"client_prefix": b.ClientPrefix,
			"user_agent":    b.UserAgent,
			"ipv4_prefix":   b.IPv4Prefix,
			"ipv6_prefix":   b.IPv6Prefix,
		}
	}
	return m
}

// EncodeEvents returns events as the file writes them (never nil).
func EncodeEvents(events []usher.Event) []any {
	out := make([]any, 0, len(events))
	for i := range events {
		out = append(out, EncodeEvent(&events[i]))
	}
	return out
}

// EncodeEvent returns an event as the file writes it: only the overrides
// it sets.
func EncodeEvent(e *usher.Event) map[string]any {
	m := map[string]any{
		"name":                   e.Name,
		"event_start_time":       formatTime(e.Start),
		"event_end_time":         formatTime(e.End),
		"shuffle_at_event_start": e.ShuffleAtStart,
	}
	if !e.PrequeueStart.IsZero() {
		m["prequeue_start_time"] = formatTime(e.PrequeueStart)
	}
	if e.DrawBeacon != "" {
		m["draw_beacon"] = e.DrawBeacon
	}
	o := &e.Overrides
	put(m, "total_active_users", o.TotalActiveUsers, identity)
	put(m, "new_users_per_minute", o.NewUsersPerMinute, identity)
	put(m, "session_duration", o.SessionDuration, formatDuration)
	put(m, "disable_session_renewal", o.DisableSessionRenewal, identity)
	put(m, "queueing_method", o.QueueingMethod, methodName)
	put(m, "queue_all", o.QueueAll, identity)
	put(m, "queueing_status_code", o.QueueingStatusCode, identity)
	put(m, "json_response_enabled", o.JSONResponseEnabled, identity)
	put(m, "custom_page_html", o.CustomPageHTML, identity)
	put(m, "default_template_language", o.DefaultTemplateLanguage, identity)
	put(m, "refresh_interval", o.RefreshInterval, formatDuration)
	put(m, "client_limit", o.ClientLimit, func(c usher.ClientLimit) map[string]any { return encodeClientLimit(&c) })
	put(m, "proof_of_work", o.ProofOfWork, func(p usher.ProofOfWork) map[string]any { return encodeProofOfWork(&p) })
	put(m, "autopilot", o.Autopilot, func(a usher.Autopilot) map[string]any { return encodeAutopilot(&a) })
	return m
}

// EncodeRules returns rules as the file writes them (never nil).
func EncodeRules(rules []usher.Rule) []any {
	out := make([]any, 0, len(rules))
	for i := range rules {
		out = append(out, EncodeRule(&rules[i]))
	}
	return out
}

// EncodeRule returns a rule as the file writes it.
func EncodeRule(r *usher.Rule) map[string]any {
	m := map[string]any{
		"expression": r.Expression,
		"action":     r.Action,
		"enabled":    r.Enabled,
	}
	if r.Description != "" {
		m["description"] = r.Description
	}
	return m
}

func encodeClientLimit(c *usher.ClientLimit) map[string]any {
	// network_new_visitors_per_minute 0 reads back as its default
	// (usher.NetworkMultiple times new_visitors_per_minute).
	return map[string]any{
		"new_visitors_per_minute":         c.NewVisitorsPerMinute,
		"ipv4_prefix":                     c.IPv4Prefix,
		"ipv6_prefix":                     c.IPv6Prefix,
		"network_new_visitors_per_minute": c.NetworkNewVisitorsPerMinute,
		"network_ipv4_prefix":             c.NetworkIPv4Prefix,
		"network_ipv6_prefix":             c.NetworkIPv6Prefix,
		"over_limit":                      c.OverLimit,
	}
}

func encodeProofOfWork(p *usher.ProofOfWork) map[string]any {
	return map[string]any{"difficulty": p.Difficulty, "always": p.Always}
}

// put sets m[name] to enc(*v) when v is set.
func put[T, U any](m map[string]any, name string, v *T, enc func(T) U) {
	if v != nil {
		m[name] = enc(*v)
	}
}

func identity[T any](v T) T { return v }

// methodName names a queueing method, the zero value as fifo.
func methodName(m usher.QueueingMethod) string {
	if m == "" {
		return string(usher.FIFO)
	}
	return string(m)
}

func encodeAutopilot(a *usher.Autopilot) map[string]any {
	m := map[string]any{
		"enabled":                  a.Enabled,
		"min_new_users_per_minute": a.MinNewUsersPerMinute,
		"max_new_users_per_minute": a.MaxNewUsersPerMinute,
		"concurrency":              a.Concurrency,
		"min_total_active_users":   a.MinTotalActiveUsers,
		"max_total_active_users":   a.MaxTotalActiveUsers,
		"latency_percentile":       a.Percentile,
		"latency_sigma":            a.Sigma,
		"latency_factor":           a.Factor,
		"error_target":             a.ErrorTarget,
		"baseline_samples":         a.BaselineSamples,
		"decrease":                 a.Decrease,
		"recover":                  a.Recover,
		"max_changes_per_minute":   a.MaxChangesPerMinute,
		"probe_interval":           formatDuration(a.ProbeInterval),
		"probe_timeout":            formatDuration(a.ProbeTimeout),
	}
	if a.LatencyTarget != 0 {
		m["latency_target"] = formatDuration(a.LatencyTarget)
	}
	if a.HealthURL != "" {
		m["health_url"] = a.HealthURL
	}
	return m
}
