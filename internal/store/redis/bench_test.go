package redis_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// BenchmarkAdmitParallel measures one new visitor's Admit with 32 callers
// per CPU: into a room with room to spare (admitted) and into a full room
// (waits, with the queue growing).
func BenchmarkAdmitParallel(b *testing.B) {
	srv := redistest.StartServer(b)
	for _, bc := range []struct {
		name  string
		total int
	}{{"spare", 1 << 30}, {"full", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			s := mustOpen(b, redis.Options{Addrs: []string{srv.Addr()}, KeyPrefix: prefix(b)})
			ctx := context.Background()
			start := time.Now()
			var n atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					// A flash crowd: a thousand arrivals a second.
					now := start.Add(time.Duration(n.Add(1)) * time.Millisecond)
					o := op(now, bc.total, 1<<30, 10*time.Minute)
					o.WaitExp = now.Unix() + 40
					if _, err := s.Admit(ctx, "bench", o); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkRenewParallel measures one session renewal with 32 callers per
// CPU, each renewal a visitor's record read and written and its count
// moved.
func BenchmarkRenewParallel(b *testing.B) {
	srv := redistest.StartServer(b)
	s := mustOpen(b, redis.Options{Addrs: []string{srv.Addr()}, KeyPrefix: prefix(b)})
	ctx := context.Background()
	start := time.Now()
	mustAdmit(b, s, "bench", op(start.Add(-2*time.Minute), 1<<30, 1<<30, 10*time.Minute))
	var n atomic.Uint64
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			now := start.Add(time.Duration(i) * time.Millisecond)
			var v [8]byte
			v[0], v[1], v[2] = byte(i), byte(i>>8), byte(i>>16)
			r := usher.RenewOp{Now: now, Visitor: v, From: usher.Cell{Exp: now.Unix() + 300, At: now.Add(-time.Minute)},
				To: now.Unix() + 310, Counted: now, Keep: now.Unix() + 600}
			if _, err := s.Renew(ctx, "bench", r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
