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

// BenchmarkTouch measures one Touch of 1,000 renewals spread over the 60
// seconds of active cells they leave and enter.
func BenchmarkTouch(b *testing.B) {
	srv := redistest.StartServer(b)
	s := mustOpen(b, redis.Options{Addrs: []string{srv.Addr()}, KeyPrefix: prefix(b)})
	ctx := context.Background()
	start := time.Now()
	// The room exists before the moves' counted-at times (else they would
	// be from lost counters).
	mustAdmit(b, s, "bench", op(start.Add(-2*time.Minute), 1<<30, 1<<30, 10*time.Minute))
	const batch = 1000
	moves := make([]usher.Move, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		now := start.Add(time.Duration(i) * time.Second)
		for j := range moves {
			at := now.Add(-time.Duration(j%60) * time.Second)
			moves[j] = usher.Move{
				From: usher.Cell{Exp: at.Unix() + 600, At: at},
				To:   now.Unix() + 600 + int64(j%2),
			}
		}
		if err := s.Touch(ctx, "bench", now, moves); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/move")
}
