package redis_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
	"github.com/usherhq/usher/internal/store/storetest"
)

// TestMemory puts 100,000 waiters of a flash crowd in a room (arrivals over
// 2,000 seconds, most of them early; each counted in the cell of its last
// check-in, every 30 s with its own jitter) and sums the room's keys'
// MEMORY USAGE: it must stay under 8 MB. Each waiter has checked in, so
// the room also keeps its record: those must stay under 128 bytes each.
func TestMemory(t *testing.T) {
	const (
		visitors = 100_000
		span     = 2000
		refresh  = 30 * time.Second
		limit    = 8 << 20
	)
	srv := redistest.StartServer(t)
	s := mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}})
	t0 := storetest.T0
	end := t0.Add(span * time.Second)
	rng := rand.New(rand.NewPCG(1, 2))
	ops := make(chan usher.AdmitOp, 1024)
	go func() {
		defer close(ops)
		for range visitors {
			arrived := t0.Add(time.Duration(span * math.Pow(rng.Float64(), 2) * float64(time.Second)))
			period := refresh + time.Duration(rng.IntN(6001)-3000)*time.Millisecond
			last := arrived.Add(end.Sub(arrived) / period * period)
			grace := time.Second + refresh/4
			ops <- usher.AdmitOp{
				Now: last, Visitor: newVisitor(), Counted: last, Keep: last.Unix() + 600,
				// A check-in whose earlier count is gone: remembered, nothing to take out.
				From:             usher.Cell{At: last.Add(-period)},
				TotalActiveUsers: 0, NewUsersPerMinute: 100,
				SessionDuration: 10 * time.Minute,
				Bucket:          arrived.Unix(),
				WaitExp:         usher.CeilSecond(last.Add(period + grace)).Unix(),
				ActiveExp:       last.Add(10 * time.Minute).Unix(),
			}
		}
	}()
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for o := range ops {
				if _, err := s.Admit(context.Background(), "flash", o); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	st, err := s.Stats(context.Background(), "flash", end)
	if err != nil || st.Waiting != visitors {
		t.Fatalf("Stats = %+v, %v; want %d waiting", st, err, visitors)
	}
	var total int64
	for _, k := range []string{"m", "l", "w", "a", "r"} {
		n, err := strconv.ParseInt(srv.Do("MEMORY", "USAGE", "{usher:flash}:"+k, "SAMPLES", "0"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	t.Logf("%d waiters over %d arrival seconds: %d bytes in Redis (%d fields in the waiting cells, %d pages of live counts)",
		visitors, span, total, atoi(t, srv.Do("HLEN", "{usher:flash}:w")), atoi(t, srv.Do("HLEN", "{usher:flash}:l")))
	if total >= limit {
		t.Fatalf("%d bytes, want under %d", total, limit)
	}
	// The records: sample their sizes.
	n := atoi(t, srv.Do("DBSIZE")) - 5
	if n != visitors {
		t.Fatalf("%d keys besides the room's, want a record per waiter (%d)", n, visitors)
	}
	var sample, bytes int64
	for range 200 {
		k := srv.Do("RANDOMKEY")
		if !strings.Contains(k, "}:v:") {
			continue
		}
		bytes += atoi(t, srv.Do("MEMORY", "USAGE", k, "SAMPLES", "0"))
		sample++
	}
	per := bytes / sample
	t.Logf("records: %d, about %d bytes each (%d MB)", n, per, n*per>>20)
	if per > 128 {
		t.Fatalf("a record takes %d bytes, want at most 128", per)
	}
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
