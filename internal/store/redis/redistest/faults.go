package redistest

import (
	"fmt"
	"strings"
	"testing"
)

// StartPersistentServer starts a redis-server as StartServer does, but
// with an append-only file (appendonly yes, appendfsync everysec) in a data
// directory kept across Stop and Start: a server killed and started again
// comes back with what its file holds, as a server run with persistence
// does after a crash.
func StartPersistentServer(t testing.TB) *Server {
	t.Helper()
	return startServer(t, func(int) []string {
		return []string{"--appendonly", "yes", "--appendfsync", "everysec"}
	})
}

// Partition cuts the proxy off as a network partition would: from now
// on it forwards nothing either way (toxiproxy's timeout toxic with no
// timeout, on both streams), while the connections through it stay open
// and new ones are accepted and then hear nothing. Heal ends it. It
// returns its error rather than failing the test, for use off the test's
// goroutine.
func (p *Proxy) Partition() error {
	for _, stream := range []string{"upstream", "downstream"} {
		body := fmt.Sprintf(`{"name":"partition-%[1]s","type":"timeout","stream":%[1]q,"attributes":{"timeout":0}}`, stream)
		if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
			return fmt.Errorf("redistest: proxy partition: %w", err)
		}
	}
	return nil
}

// Heal ends a Partition, and any other fault: the connections that went
// through the proxy are reset (what a partition of seconds leaves of
// them once their peers' timeouts and keep-alives have given up, and
// what keeps a connection whose bytes the partition dropped from being
// used again out of step), the faults are removed and the proxy accepts
// connections again on the same address. It returns its error rather than
// failing the test, for use off the test's goroutine.
func (p *Proxy) Heal() error {
	p.p.Stop()
	p.Clear()
	if err := p.p.Start(); err != nil {
		return fmt.Errorf("redistest: proxy restart on %s: %w", p.p.Listen, err)
	}
	return nil
}
