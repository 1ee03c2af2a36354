package config

import "testing"

// TestSameRedisSentinelTLS: a change to the Sentinel, TLS or
// wait_replicas settings is a change of store.redis (a restart), and the
// same settings are not.
func TestSameRedisSentinelTLS(t *testing.T) {
	base := func() *Redis {
		return &Redis{
			Sentinel:     &RedisSentinel{MasterName: "m", Addrs: []string{"10.0.0.1:26379"}, Password: "p"},
			TLS:          true,
			TLSOptions:   &RedisTLS{CAFile: "ca.pem", ServerName: "redis.internal"},
			WaitReplicas: 1,
		}
	}
	if !sameRedis(base(), base()) {
		t.Fatal("the same settings differ")
	}
	for name, edit := range map[string]func(*Redis){
		"master name":      func(r *Redis) { r.Sentinel.MasterName = "n" },
		"sentinels":        func(r *Redis) { r.Sentinel.Addrs = append(r.Sentinel.Addrs, "10.0.0.2:26379") },
		"sentinel secret":  func(r *Redis) { r.Sentinel.Password = "q" },
		"sentinel removed": func(r *Redis) { r.Sentinel = nil },
		"server name":      func(r *Redis) { r.TLSOptions.ServerName = "other" },
		"ca file":          func(r *Redis) { r.TLSOptions.CAFile = "other.pem" },
		"tls options gone": func(r *Redis) { r.TLSOptions = nil },
		"wait replicas":    func(r *Redis) { r.WaitReplicas = 2 },
	} {
		t.Run(name, func(t *testing.T) {
			b := base()
			edit(b)
			if sameRedis(base(), b) {
				t.Error("the change is not seen")
			}
		})
	}
}
