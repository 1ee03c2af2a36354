package main

import (
	"fmt"
	"io"

	"github.com/usherhq/usher/internal/bench"
)

// writeLoad prints the Redis load model's figures.
func writeLoad(w io.Writer, l *bench.LoadStats) {
	fmt.Fprintf(w, "Redis load on %d node(s) and %d shard(s) (a script call %.3g us, a batched move %.3g us more), over %s s of simulated time:\n",
		l.Nodes, l.Shards, l.ScriptCostUS, l.MoveCostUS, bench.Count(l.Seconds))
	fmt.Fprintf(w, "  check-ins   %s a second (peak %s at %s), %.1f %% far back (moves batched); %s new visitors far back, batched too\n",
		bench.Count(int(l.CheckInsPerSecond.Mean+0.5)), bench.Count(int(l.CheckInsPerSecond.Peak)), clock(l.CheckInsPerSecond.PeakAtS),
		share(l.FarBack-l.FarBackNew, l.CheckIns), bench.Count(int(l.FarBackNew)))
	fmt.Fprintf(w, "  calls       %s a second (peak %s at %s): %s new visitors, %s admissions, %s near-front check-ins, %s renewals, %s reads, %s batch flushes, %s view reads\n",
		bench.Count(int(l.CallsPerSecond.Mean+0.5)), bench.Count(int(l.CallsPerSecond.Peak)), clock(l.CallsPerSecond.PeakAtS),
		bench.Count(int(l.NewVisitors)), bench.Count(int(l.Admissions)), bench.Count(int(l.NearCheckIns)), bench.Count(int(l.Renewals)),
		bench.Count(int(l.Reads)), bench.Count(int(l.Flushes)), bench.Count(int(l.Views)))
	fmt.Fprintf(w, "  per check-in %.3f calls (%.3f of them the check-ins' own)\n", l.CallsPerCheckIn, l.CheckInCallsPerCheckIn)
	for _, s := range l.ByShard {
		fmt.Fprintf(w, "  shard %d (%s): %s calls a second (peak %s at %s), %.3f of a core (peak %.3f at %s)\n", s.Shard, s.Role,
			bench.Count(int(s.Calls.Mean+0.5)), bench.Count(int(s.Calls.Peak)), clock(s.Calls.PeakAtS),
			s.CPU.Mean, s.CPU.Peak, clock(s.CPU.PeakAtS))
	}
}

// clock writes s seconds as h:mm:ss.
func clock(s int) string { return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60) }

// share is n in percent of of.
func share(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}
