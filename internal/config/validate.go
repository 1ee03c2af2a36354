package config

import (
	"time"

	"github.com/usherhq/usher"
)

// The limits on room settings.
const (
	minSessionDuration = 10 * time.Second
	minRefreshInterval = time.Second
	maxRefreshInterval = 5 * time.Minute
)

// Validate checks c and returns a *ValidationError holding every problem
// found, or nil. It does no I/O: a secret_file or token_file counts as set,
// and its content is checked only if Load read it. The zero values that
// usher gives a meaning (queueing method, status code, cookie attributes,
// template language, and a room's origin when Origin is set) are valid.
func (c *Config) Validate() error {
	var r report
	c.checkListeners(&r)
	if c.Origin != "" {
		if msg := checkOrigin(c.Origin); msg != "" {
			r.add(0, loc{path: "origin"}, "%s", msg)
		}
	}
	for i, s := range c.TrustedProxies {
		if _, err := parseProxy(s); err != nil {
			r.add(0, loc{path: "trusted_proxies"}.index(i), "%v", err)
		}
	}
	if c.Store.Embedded.Path == "" {
		r.add(0, loc{path: "store.embedded.path"}, "required")
	}
	c.checkKeys(&r)
	ids := make(map[string]int)
	for i := range c.Rooms {
		rm := &c.Rooms[i]
		at := roomLoc(i, rm.ID)
		checkRoom(&r, rm, at, c.Origin != "")
		if first, dup := ids[rm.ID]; dup && rm.ID != "" {
			r.add(0, at.field("id"), "same as %s", roomRef(first, rm.ID))
		} else {
			ids[rm.ID] = i
		}
	}
	checkSameRoutes(&r, c.Rooms)
	checkCookieScopes(&r, c.Rooms)
	return r.err()
}

// checkListeners checks the public and admin listeners.
func (c *Config) checkListeners(r *report) {
	if msg := checkHostPort(c.Listen); msg != "" {
		r.add(0, loc{path: "listen"}, "%s", msg)
	}
	a := &c.Admin
	if a.Listen == "" {
		return
	}
	at := loc{path: "admin"}
	if msg := checkHostPort(a.Listen); msg != "" {
		r.add(0, at.field("listen"), "%s", msg)
	} else if sameListener(a.Listen, c.Listen) {
		r.add(0, at.field("listen"), "must differ from listen (%s), got %s", c.Listen, a.Listen)
	}
	switch {
	case a.Token != "" && a.TokenFile != "":
		r.add(0, at, "set token or token_file, not both")
	case a.Token == "" && a.TokenFile == "":
		r.add(0, at.field("token"), "required when admin.listen is set (set token or token_file)")
	}
}

// checkKeys checks the key ring.
func (c *Config) checkKeys(r *report) {
	ids := make(map[string]int)
	for i, k := range c.Keys {
		at := loc{path: "keys"}.index(i)
		if !keyIDPattern.MatchString(k.ID) {
			r.add(0, at.field("id"), "must be 1 to 16 of A-Z, a-z, 0-9, '_' and '-', got %q", k.ID)
		} else if first, dup := ids[k.ID]; dup {
			r.add(0, at.field("id"), "same as keys[%d]", first)
		} else {
			ids[k.ID] = i
		}
		switch {
		case k.Secret != "" && k.SecretFile != "":
			r.add(0, at, "set secret or secret_file, not both")
		case k.Secret == "" && k.SecretFile == "":
			r.add(0, at.field("secret"), "required (set secret or secret_file)")
		case k.Secret != "":
			if _, err := decodeSecret(k.Secret); err != nil {
				r.add(0, at.field("secret"), "%v", err)
			}
		case k.secretRead:
			if _, err := decodeSecret(k.fileSecret); err != nil {
				r.add(0, at.field("secret_file"), "%s: %v", k.SecretFile, err)
			}
		}
	}
}

// checkRoom checks one room's own fields. hasOrigin reports whether the
// config has a top-level origin for the room to fall back on.
func checkRoom(r *report, rm *usher.Room, at loc, hasOrigin bool) {
	switch {
	case rm.ID == "":
		r.add(0, at.field("id"), "required")
	case !roomIDPattern.MatchString(rm.ID):
		r.add(0, at.field("id"), "must be 1 to 63 of a-z, 0-9, '_' and '-', starting with a letter or digit, got %q", rm.ID)
	}
	switch {
	case rm.Origin == "" && !hasOrigin:
		r.add(0, at.field("origin"), "required (the config has no top-level origin to fall back on)")
	case rm.Origin != "":
		if msg := checkOrigin(rm.Origin); msg != "" {
			r.add(0, at.field("origin"), "%s", msg)
		}
	}
	if len(rm.Routes) == 0 {
		r.add(0, at.field("routes"), "must list at least one route (leave routes out for every path on any host)")
	}
	for i, rt := range rm.Routes {
		rat := at.field("routes").index(i)
		if msg := checkRoutePath(rt.Path); msg != "" {
			r.add(0, rat.field("path"), "%s", msg)
		}
		if rt.Host == "" {
			continue
		}
		if msg := checkHost(rt.Host); msg != "" {
			r.add(0, rat.field("host"), "%s", msg)
		}
	}
	checkSettings(r, &rm.Settings, at)
}

// checkSettings checks a room's settings.
func checkSettings(r *report, s *usher.Settings, at loc) {
	atLeast := func(name string, v, min int) {
		switch {
		case v == 0:
			r.add(0, at.field(name), "required, at least %d", min)
		case v < min:
			r.add(0, at.field(name), "must be at least %d, got %d", min, v)
		}
	}
	atLeast("total_active_users", s.TotalActiveUsers, 1)
	atLeast("new_users_per_minute", s.NewUsersPerMinute, 1)
	if s.SessionDuration < minSessionDuration {
		r.add(0, at.field("session_duration"), "must be at least %s, got %s", formatDuration(minSessionDuration), formatDuration(s.SessionDuration))
	}
	if d := s.RefreshInterval; d < minRefreshInterval || d > maxRefreshInterval {
		r.add(0, at.field("refresh_interval"), "must be from %s to %s, got %s", formatDuration(minRefreshInterval), formatDuration(maxRefreshInterval), formatDuration(d))
	}
	switch s.QueueingMethod {
	case "", usher.FIFO, usher.Random, usher.Passthrough, usher.Reject:
	default:
		r.add(0, at.field("queueing_method"), "must be fifo, random, passthrough or reject, got %q", s.QueueingMethod)
	}
	switch s.QueueingStatusCode {
	case 0, 200, 202, 429, 503:
	default:
		r.add(0, at.field("queueing_status_code"), "must be 200, 202, 429 or 503, got %d", s.QueueingStatusCode)
	}
	if s.CookieSuffix != "" && !cookieSuffixPattern.MatchString(s.CookieSuffix) {
		r.add(0, at.field("cookie_suffix"), "must be 1 to 32 of A-Z, a-z, 0-9 and '_', got %q", s.CookieSuffix)
	}
	checkCookieAttributes(r, s.CookieAttributes, at.field("cookie_attributes"))
	if l := s.DefaultTemplateLanguage; l != "" && !languagePattern.MatchString(l) {
		r.add(0, at.field("default_template_language"), "must be a language tag like \"en-US\", \"fr\" or \"de\", got %q", l)
	}
}

// checkCookieAttributes checks SameSite and Secure and their combination.
func checkCookieAttributes(r *report, ca usher.CookieAttributes, at loc) {
	sameSiteOK, secureOK := true, true
	switch ca.SameSite {
	case "", "auto", "lax", "strict", "none":
	default:
		sameSiteOK = false
		r.add(0, at.field("samesite"), "must be auto, lax, strict or none, got %q", ca.SameSite)
	}
	switch ca.Secure {
	case "", "auto", "always", "never":
	default:
		secureOK = false
		r.add(0, at.field("secure"), "must be auto, always or never, got %q", ca.Secure)
	}
	if sameSiteOK && secureOK && ca.SameSite == "none" && ca.Secure == "never" {
		r.add(0, at, "samesite none needs a Secure cookie, and secure is never: browsers drop such cookies (set secure to auto or always)")
	}
}

// formatDuration writes d without zero trailing units: "5m", "1h", "1m30s".
func formatDuration(d time.Duration) string {
	s := d.String()
	if len(s) > 3 && s[len(s)-3:] == "m0s" {
		s = s[:len(s)-2]
	}
	if len(s) > 3 && s[len(s)-3:] == "h0m" {
		s = s[:len(s)-2]
	}
	return s
}
