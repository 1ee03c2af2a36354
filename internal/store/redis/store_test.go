package redis_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
	"github.com/usherhq/usher/internal/store/storetest"
)

// mustOpen opens a Store with opts, closed when the test ends.
func mustOpen(tb testing.TB, opts redis.Options) *redis.Store {
	tb.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Timeout == 0 {
		// Tests share two cores with others: a call that waits for a core
		// longer than the production default is not a fault of the store.
		// Tests of timeouts set their own.
		opts.Timeout = 5 * time.Second
	}
	s, err := redis.Open(context.Background(), opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// prefix returns a key prefix of the test's own, so that every test sees
// an empty store.
func prefix(tb testing.TB) string {
	return strings.NewReplacer("/", ".", " ", "_", "{", "(", "}", ")").Replace(tb.Name())
}

func TestConformance(t *testing.T) {
	srv := redistest.StartServer(t)
	storetest.Run(t, func(t *testing.T) usher.Store {
		return mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}, KeyPrefix: prefix(t)})
	})
}

func TestConformanceCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	storetest.Run(t, func(t *testing.T) usher.Store {
		return mustOpen(t, redis.Options{Addrs: c.Addrs(), Cluster: true, KeyPrefix: prefix(t)})
	})
}

// visitors numbers the test visitors.
var visitors atomic.Uint64

// newVisitor returns a visitor id no other test op has.
func newVisitor() [8]byte {
	var v [8]byte
	n := visitors.Add(1)
	for i := range v {
		v[i] = byte(n >> (8 * (7 - i)))
	}
	return v
}

// op returns an AdmitOp for a new visitor arriving at now.
func op(now time.Time, total, perMinute int, session time.Duration) usher.AdmitOp {
	return usher.AdmitOp{
		Now:               now,
		Visitor:           newVisitor(),
		Counted:           now,
		Keep:              now.Unix() + 600,
		TotalActiveUsers:  total,
		NewUsersPerMinute: perMinute,
		SessionDuration:   session,
		Bucket:            now.Unix(),
		WaitExp:           now.Unix() + 5,
		ActiveExp:         usher.CeilSecond(now.Add(session)).Unix(),
	}
}

func mustAdmit(tb testing.TB, s usher.Store, room string, o usher.AdmitOp) usher.AdmitResult {
	tb.Helper()
	res, err := s.Admit(context.Background(), room, o)
	if err != nil {
		tb.Fatalf("Admit: %v", err)
	}
	return res
}
