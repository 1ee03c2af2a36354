package config

import (
	"regexp"
	"time"
)

var keyPrefixPattern = regexp.MustCompile(`^[A-Za-z0-9:_.-]{1,64}$`)

// check validates the Redis store.
func (rd *Redis) check(r *report) {
	at := loc{path: "store.redis"}
	if len(rd.Addrs) == 0 {
		r.add(0, at.field("addrs"), "required: at least one host:port")
	}
	for i, a := range rd.Addrs {
		if msg := checkHostPort(a); msg != "" {
			r.add(0, at.field("addrs").index(i), "%s", msg)
		}
	}
	if len(rd.Addrs) > 1 && !rd.Cluster {
		r.add(0, at.field("addrs"), "has %d addresses: several are seed nodes of a cluster (set cluster: true), one is a single server", len(rd.Addrs))
	}
	if rd.Password != "" && rd.PasswordFile != "" {
		r.add(0, at, "set password or password_file, not both")
	}
	switch {
	case rd.DB < 0:
		r.add(0, at.field("db"), "must be 0 or more, got %d", rd.DB)
	case rd.Cluster && rd.DB != 0:
		r.add(0, at.field("db"), "must be 0 on a cluster (Redis Cluster has one database), got %d", rd.DB)
	}
	if rd.KeyPrefix != "" && !keyPrefixPattern.MatchString(rd.KeyPrefix) {
		r.add(0, at.field("key_prefix"), "must be 1 to 64 of A-Z, a-z, 0-9, ':', '_', '.' and '-', got %q", rd.KeyPrefix)
	}
	switch rd.FailMode {
	case "", "open", "closed":
	default:
		r.add(0, at.field("fail_mode"), `must be "open" or "closed", got %q`, rd.FailMode)
	}
	if rd.Timeout != 0 && (rd.Timeout < 10*time.Millisecond || rd.Timeout > 10*time.Second) {
		r.add(0, at.field("timeout"), "must be between 10ms and 10s, got %v", rd.Timeout)
	}
	if cs := rd.ClockSlack; cs != nil {
		switch {
		case *cs < 0 || *cs > MaxClockSlack:
			r.add(0, at.field("clock_slack"), "must be from 0s to %v, got %v", MaxClockSlack, *cs)
		case *cs%time.Millisecond != 0:
			r.add(0, at.field("clock_slack"), "must be whole milliseconds (tickets keep session ends to the millisecond), got %v", *cs)
		}
	}
}
