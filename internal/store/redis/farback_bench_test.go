package redis_test

import (
	"context"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// BenchmarkCheckInFarBack measures a waiter's check-in far back in a line
// of 20,000 (a room of one place and one a minute), 32 callers per CPU:
// one script call each ("call", FarBack off), or answered from the view
// and moved in batches ("batched"). Besides the time a check-in takes
// here, it reports the Redis server's own CPU a check-in costs
// (redis-us/op, from INFO commandstats: every script call and the view
// reads) and the Redis calls a check-in makes (calls/op): what one shard
// can carry.
func BenchmarkCheckInFarBack(b *testing.B) {
	srv := redistest.StartServer(b)
	for _, bc := range []struct {
		name string
		off  bool
	}{{"call", true}, {"batched", false}} {
		b.Run(bc.name, func(b *testing.B) {
			s := mustOpen(b, redis.Options{Addrs: []string{srv.Addr()}, KeyPrefix: prefix(b), FarBack: redis.FarBack{Off: bc.off}})
			ctx := context.Background()
			start := time.Now().Add(-time.Minute)
			const line = 20000
			type waiter struct {
				mu  sync.Mutex
				op  usher.AdmitOp
				seq int
			}
			ws := make([]*waiter, line)
			for i := range ws {
				// A hundred arrivals a second, over 200 s.
				now := start.Add(time.Duration(i) * 10 * time.Millisecond).Add(-200 * time.Second)
				o := op(now, 1, 1, time.Hour)
				o.WaitExp = now.Unix() + 3600
				mustAdmit(b, s, "line", o)
				o.From = usher.Cell{Exp: o.WaitExp, At: o.Counted}
				ws[i] = &waiter{op: o}
			}
			s.FlushMoves(ctx)
			usec0, calls0 := scriptUsec(b, srv), s.Calls()
			var n atomic.Int64
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					w := ws[i%line]
					w.mu.Lock()
					w.seq++
					o := w.op
					o.Now = time.Now()
					o.Counted = o.From.At.Add(time.Duration(w.seq) * time.Millisecond)
					if !o.Counted.After(o.Now) {
						o.Counted = o.Now
					}
					o.WaitExp = o.Now.Unix() + 3600
					if _, err := s.Admit(ctx, "line", o); err != nil {
						w.mu.Unlock()
						b.Fatal(err)
					}
					w.op.From = usher.Cell{Exp: o.WaitExp, At: o.Counted}
					w.mu.Unlock()
				}
			})
			s.FlushMoves(ctx)
			b.StopTimer()
			b.ReportMetric(float64(scriptUsec(b, srv)-usec0)/float64(b.N), "redis-us/op")
			b.ReportMetric(float64(s.Calls()-calls0)/float64(b.N), "calls/op")
			if fb := s.FarBackStats(); !bc.off && fb.Replays+fb.Dropped > 0 {
				b.Fatalf("%d replays, %d dropped: the benchmark's check-ins are not honest", fb.Replays, fb.Dropped)
			}
		})
	}
}

var usecRE = regexp.MustCompile(`cmdstat_(?:evalsha|eval|evalsha_ro|eval_ro):calls=\d+,usec=(\d+)`)

// scriptUsec returns the microseconds the server spent in script calls.
func scriptUsec(tb testing.TB, srv *redistest.Server) int64 {
	var sum int64
	for _, m := range usecRE.FindAllStringSubmatch(srv.Do("INFO", "commandstats"), -1) {
		v, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			tb.Fatal(err)
		}
		sum += v
	}
	return sum
}
