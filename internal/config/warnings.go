package config

import (
	"fmt"
	"net/url"
	"strings"
)

// Warnings returns advice on a valid config: settings that work but leave
// a door open or will surprise the operator on the day. usher check prints
// them and serve logs them; none stops usher. It assumes c is valid.
func (c *Config) Warnings() []string {
	var out []string
	if !c.RejectUnknownHosts() && c.namesHosts() {
		for _, rm := range c.sharedOrigins() {
			out = append(out, fmt.Sprintf("unknown_hosts is pass and room %q proxies to the origin that unmatched requests go to (%s): a request for another host (or none) reaches that origin without the room's decision. Set unknown_hosts: reject, or give the room an origin of its own.", rm, c.Origin))
		}
	}
	if c.CountryHeader != "" && len(c.TrustedProxies) == 0 {
		out = append(out, fmt.Sprintf("country_header is %s but trusted_proxies is empty: the header is believed only from a trusted proxy (any client can send it), so rules see no country. List the proxy that sets it in trusted_proxies.", c.CountryHeader))
	}
	for i := range c.Rooms {
		rm := &c.Rooms[i]
		limited := rm.ClientLimit.On()
		for j := range rm.Events {
			if o := rm.Events[j].Overrides.ClientLimit; o != nil && o.On() {
				limited = true
			}
		}
		switch {
		case limited && len(c.TrustedProxies) == 0:
			out = append(out, fmt.Sprintf("room %q limits new visitors per client but trusted_proxies is empty: behind a load balancer every visitor has the balancer's address and shares one limit. List the balancer's addresses in trusted_proxies (or ignore this if visitors reach usher directly).", rm.ID))
		case !limited:
			out = append(out, fmt.Sprintf("room %q has no client_limit: one client can take as many places in line as it sends requests without a cookie. Consider client_limit: {new_visitors_per_minute: 20} (with trusted_proxies set behind a load balancer).", rm.ID))
		}
		if rm.Shards > 1 && c.Store.Redis == nil {
			out = append(out, fmt.Sprintf("room %q sets shards: %d, but the embedded store is one process and ignores it: shards spreads a room's line over Redis hash slots (store.redis). Leave it out, or move the room to Redis.", rm.ID, rm.Shards))
		}
		for j := range rm.Events {
			e := &rm.Events[j]
			if e.PrequeueStart.IsZero() {
				continue
			}
			if open := e.Start.Sub(e.PrequeueStart); open < rm.SessionDuration {
				out = append(out, fmt.Sprintf("room %q: the pre-queue of %q opens %s before its start, less than the room's session_duration (%s): sessions from before the pre-queue may still run at the start. Open the pre-queue at least one session earlier.",
					rm.ID, e.Name, formatDuration(open), formatDuration(rm.SessionDuration)))
			}
		}
	}
	return out
}

// sharedOrigins returns the ids of the rooms whose origin is the top-level
// origin's host (the origin unmatched requests go to).
func (c *Config) sharedOrigins() []string {
	top, err := url.Parse(c.Origin)
	if c.Origin == "" || err != nil {
		return nil
	}
	var ids []string
	for i := range c.Rooms {
		rm := &c.Rooms[i]
		u, err := url.Parse(rm.Origin)
		if rm.Origin == "" || (err == nil && strings.EqualFold(u.Host, top.Host)) {
			ids = append(ids, rm.ID)
		}
	}
	return ids
}
