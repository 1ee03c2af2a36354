//go:build unix

package local

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// BenchmarkAdmitDurable is new visitors admitted by many goroutines at once
// (32, as the throughput scenario's workers) into a room with free slots,
// on a file store: each Admit returns once its admission is on disk. It
// reports the commits (each an fdatasync) per admission.
func BenchmarkAdmitDurable(b *testing.B) {
	st, err := Open(Options{Path: filepath.Join(b.TempDir(), "u.db"), FlushInterval: time.Hour,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var n atomic.Uint64
	t0 := time.Now()
	commits0, cpu0 := st.commits.Load(), cpuTime()
	b.SetParallelism(16)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			i := n.Add(1)
			var v [8]byte
			for k := range v {
				v[k] = byte((i * 0x9E3779B97F4A7C15) >> (8 * k)) // spread over the key space, as random ids are
			}
			now := t0.Add(time.Duration(i) * time.Microsecond)
			res, err := st.Admit(ctx, "r", usher.AdmitOp{Now: now, Visitor: v, Counted: now, Keep: now.Unix() + 600,
				TotalActiveUsers: 1 << 30, NewUsersPerMinute: 1 << 30, SessionDuration: time.Hour,
				Bucket: now.Unix(), WaitExp: now.Unix() + 60, ActiveExp: now.Unix() + 3600})
			if err != nil || !res.Admitted {
				b.Error("not admitted", err)
				return
			}
		}
	})
	b.ReportMetric(float64(st.commits.Load()-commits0)/float64(b.N), "commits/op")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-us/op")
}

// cpuTime is the process's CPU time so far (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
