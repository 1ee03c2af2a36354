package config

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

var keyPrefixPattern = regexp.MustCompile(`^[A-Za-z0-9:_.-]{1,64}$`)

// check validates the Redis store.
func (rd *Redis) check(r *report) {
	at := loc{path: "store.redis"}
	if rd.Sentinel != nil {
		rd.checkSentinel(r, at)
	} else if len(rd.Addrs) == 0 {
		r.add(0, at.field("addrs"), "required: at least one host:port (or sentinel)")
	}
	rd.checkTLS(r, at)
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
	switch {
	case rd.WaitReplicas < 0 || rd.WaitReplicas > 16:
		r.add(0, at.field("wait_replicas"), "must be from 0 to 16, got %d", rd.WaitReplicas)
	case rd.WaitReplicas > 0 && rd.Cluster:
		r.add(0, at.field("wait_replicas"), "is not supported with cluster: true (WAIT must follow the write on its shard's connection)")
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

// RedisSentinel finds the primary through Redis Sentinel, and follows it
// to the replica the sentinels promote when it fails.
type RedisSentinel struct {
	// MasterName is the name the sentinels monitor the primary under (the
	// <name> of "sentinel monitor <name> <ip> <port> <quorum>"). Required.
	MasterName string
	// Addrs are the sentinels' host:port addresses (port 26379 by
	// default in Redis). Required: list them all; one that answers is
	// enough to start.
	Addrs []string
	// Username and Password authenticate to the sentinels (empty: none);
	// store.redis.username and password authenticate to the primary.
	// PasswordFile, read by Load relative to the config file, may hold
	// the password instead.
	Username, Password, PasswordFile string

	filePassword string // PasswordFile's content, read by Load
}

// Secret returns Password, or PasswordFile's content once Load read it.
func (s *RedisSentinel) Secret() string {
	if s.Password != "" {
		return s.Password
	}
	return s.filePassword
}

// RedisTLS says how to verify Redis over TLS, and what to show it: for
// managed services with their own certificate authority, or that want a
// client certificate. Writing it turns TLS on.
type RedisTLS struct {
	// CAFile is a PEM file of the certificate authorities that sign the
	// servers' certificates (empty: the system's roots). Read by Load
	// relative to the config file.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and its private
	// key, for servers that require one (empty: none). Both or neither.
	CertFile, KeyFile string
	// ServerName is the name the servers' certificates must carry (empty:
	// the host of the address dialled). Sentinels name the primary by IP
	// address: behind Sentinel, set it unless the certificates carry the
	// servers' IP addresses.
	ServerName string
	// InsecureSkipVerify is refused: a connection to Redis that is not
	// verified lets anyone on the path read and change every count.
	InsecureSkipVerify bool

	roots *x509.CertPool   // CAFile's certificates, read by Load
	cert  *tls.Certificate // CertFile and KeyFile, read by Load
}

// ClientTLS returns the TLS settings to connect to Redis (and its
// sentinels) with, or nil without TLS.
func (r *Redis) ClientTLS() *tls.Config {
	if !r.TLS {
		return nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if t := r.TLSOptions; t != nil {
		c.RootCAs, c.ServerName = t.roots, t.ServerName
		if t.cert != nil {
			c.Certificates = []tls.Certificate{*t.cert}
		}
	}
	return c
}

// readFiles reads the password files and the TLS files relative to dir,
// and returns the problems met.
func (r *Redis) readFiles(dir string) report {
	var rep report
	at := loc{path: "store.redis"}
	if r.PasswordFile != "" {
		if s, err := readSecretFile(dir, r.PasswordFile); err != nil {
			rep.add(0, at.field("password_file"), "%v", err)
		} else {
			r.filePassword = s
		}
	}
	if sen := r.Sentinel; sen != nil && sen.PasswordFile != "" {
		if s, err := readSecretFile(dir, sen.PasswordFile); err != nil {
			rep.add(0, at.field("sentinel").field("password_file"), "%v", err)
		} else {
			sen.filePassword = s
		}
	}
	t := r.TLSOptions
	if t == nil {
		return rep
	}
	at = at.field("tls")
	read := func(field, name string) []byte {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		b, err := os.ReadFile(name)
		if err != nil {
			rep.add(0, at.field(field), "%v", err)
			return nil
		}
		return b
	}
	if t.CAFile != "" {
		if b := read("ca_file", t.CAFile); b != nil {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(b) {
				rep.add(0, at.field("ca_file"), "%s holds no PEM certificate", t.CAFile)
			} else {
				t.roots = pool
			}
		}
	}
	if t.CertFile != "" && t.KeyFile != "" {
		cb, kb := read("cert_file", t.CertFile), read("key_file", t.KeyFile)
		if cb != nil && kb != nil {
			if cert, err := tls.X509KeyPair(cb, kb); err != nil {
				rep.add(0, at.field("cert_file"), "%s and %s are not a PEM certificate and its key: %v", t.CertFile, t.KeyFile, err)
			} else {
				t.cert = &cert
			}
		}
	}
	return rep
}

// checkSentinel validates store.redis.sentinel and what it excludes.
func (rd *Redis) checkSentinel(r *report, at loc) {
	sen := rd.Sentinel
	sat := at.field("sentinel")
	if len(rd.Addrs) > 0 {
		r.add(0, sat, "set sentinel or addrs, not both: the sentinels tell usher the primary's address")
	}
	if rd.Cluster {
		r.add(0, sat, "set sentinel or cluster: true, not both: a cluster fails over by itself")
	}
	if sen.MasterName == "" {
		r.add(0, sat.field("master_name"), `required: the name the sentinels monitor the primary under ("sentinel monitor <name> ..." in their config)`)
	}
	if len(sen.Addrs) == 0 {
		r.add(0, sat.field("addrs"), "required: the sentinels' host:port addresses (Redis's sentinels listen on 26379 by default)")
	}
	for i, a := range sen.Addrs {
		if msg := checkHostPort(a); msg != "" {
			r.add(0, sat.field("addrs").index(i), "%s", msg)
		}
	}
	if sen.Password != "" && sen.PasswordFile != "" {
		r.add(0, sat, "set password or password_file, not both")
	}
}

// checkTLS validates store.redis.tls.
func (rd *Redis) checkTLS(r *report, at loc) {
	t := rd.TLSOptions
	if t == nil {
		return
	}
	at = at.field("tls")
	if t.InsecureSkipVerify {
		r.add(0, at.field("insecure_skip_verify"), "refused: a connection to Redis that is not verified lets anyone on the path read and change every count; set ca_file to the authority that signed the servers' certificates (and server_name if they name another host)")
	}
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		r.add(0, at.field("key_file"), "required with cert_file: the client certificate's private key")
	case t.CertFile == "" && t.KeyFile != "":
		r.add(0, at.field("cert_file"), "required with key_file: the client certificate")
	}
}
