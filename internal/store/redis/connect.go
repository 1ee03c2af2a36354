package redis

import (
	"crypto/tls"
	"net"
	"strings"
	"time"

	"github.com/usherhq/usher"
	"github.com/valkey-io/valkey-go"
)

// Sentinel finds the primary through Redis Sentinel: the sentinels name
// the primary of MasterName, and the client moves to the replica they
// promote when it fails.
type Sentinel struct {
	// MasterName is the name the sentinels monitor the primary under
	// (sentinel monitor <name> ...). Required.
	MasterName string
	// Addrs are the sentinels' host:port addresses: all of them is best,
	// one is enough to start (the client learns the others).
	Addrs []string
	// Username and Password authenticate to the sentinels (empty: none);
	// Options.Username and Options.Password authenticate to the primary.
	Username, Password string
}

// sentinelRefresh is how often a client asks the sentinels which server is
// the primary, besides following their +switch-master notices: a notice
// missed (the connection to that sentinel was down at the time) would
// otherwise leave the client on a demoted primary, refused every write.
const sentinelRefresh = 2 * time.Second

// clientOption checks opts (defaults applied) and returns the valkey-go
// options that connect as they say: to one server, a cluster, or the
// primary the sentinels name.
func clientOption(opts Options) (valkey.ClientOption, error) {
	sen := opts.Sentinel
	switch {
	case sen != nil && len(opts.Addrs) != 0:
		return valkey.ClientOption{}, usher.Errorf(usher.EInvalid, "redis: addresses and sentinel: the sentinels name the primary, give one or the other")
	case sen != nil && opts.Cluster:
		return valkey.ClientOption{}, usher.Errorf(usher.EInvalid, "redis: cluster and sentinel: a cluster fails over by itself, give one or the other")
	case sen != nil && sen.MasterName == "":
		return valkey.ClientOption{}, usher.Errorf(usher.EInvalid, "redis: sentinel without a master name")
	case sen != nil && len(sen.Addrs) == 0:
		return valkey.ClientOption{}, usher.Errorf(usher.EInvalid, "redis: sentinel without addresses")
	case sen == nil && len(opts.Addrs) == 0:
		return valkey.ClientOption{}, usher.Errorf(usher.EInvalid, "redis: no address")
	case sen == nil && !opts.Cluster && len(opts.Addrs) != 1:
		return valkey.ClientOption{}, usher.Errorf(usher.EInvalid, "redis: %d addresses without cluster: want one", len(opts.Addrs))
	case opts.WaitReplicas < 0:
		return valkey.ClientOption{}, usher.Errorf(usher.EInvalid, "redis: wait replicas %d: want 0 or more", opts.WaitReplicas)
	case opts.Cluster && opts.WaitReplicas > 0:
		return valkey.ClientOption{}, usher.Errorf(usher.EInvalid, "redis: wait replicas with cluster: not supported")
	case opts.Cluster && opts.DB != 0:
		return valkey.ClientOption{}, usher.Errorf(usher.EInvalid, "redis: db %d with cluster: a cluster has only db 0", opts.DB)
	case strings.ContainsAny(opts.KeyPrefix, "{}"):
		return valkey.ClientOption{}, usher.Errorf(usher.EInvalid, "redis: key prefix %q: must not contain { or }", opts.KeyPrefix)
	}
	dialer := net.Dialer{Timeout: max(opts.Timeout, time.Second)}
	tc := opts.TLSConfig
	if tc == nil && opts.TLS {
		tc = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	co := valkey.ClientOption{
		InitAddress:       opts.Addrs,
		Username:          opts.Username,
		Password:          opts.Password,
		SelectDB:          opts.DB,
		ClientName:        "usher",
		ForceSingleClient: !opts.Cluster,
		DisableCache:      true,
		Dialer:            dialer,
		TLSConfig:         tc,
		// A server that stops answering frees the connection after this
		// (it is also the keep-alive PING's timeout): four timeouts, so a
		// server slower than the timeout, but answering, keeps it.
		ConnWriteTimeout: max(4*opts.Timeout, 2*time.Second),
		// Calls always go through the pipeline, even one at a time. Alone
		// on its connection, a call that timed out closed it, and with
		// replies half the timeout late the next call's reconnection
		// (HELLO) and its own round trip took the whole timeout: every
		// call failed from then on (slow looked down).
		AlwaysPipelining: true,
		// One connection to the server, dialled before Open returns (the
		// client dials it, Open's PING uses it) and used by every call;
		// with Cluster, one per node. valkey-go's default opens up to four (two on two cores),
		// each dialled by the first call it happens to be given (a key's
		// call goes to one at random), the handshake (HELLO, CLIENT
		// SETNAME, SELECT) inside that call's timeout: under latency that
		// call cost two round trips, and one that timed out on the
		// handshake closed the connection it was opening, dialled again
		// by the next. One connection pipelines every call; its reply
		// waits only for the latency, never for another call's.
		PipelineMultiplex: -1,
	}
	if sen != nil {
		co.InitAddress = sen.Addrs
		co.ForceSingleClient = false
		co.Sentinel = valkey.SentinelOption{
			MasterSet:               sen.MasterName,
			Username:                sen.Username,
			Password:                sen.Password,
			ClientName:              "usher",
			Dialer:                  dialer,
			TLSConfig:               tc,
			TopologyRefreshInterval: sentinelRefresh,
		}
	}
	return co, nil
}
