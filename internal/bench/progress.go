package bench

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Progress is how far a run has got, for a progress line.
type Progress struct {
	// Elapsed is the time since the run's start: real time for Run,
	// simulated time for Simulate.
	Elapsed time.Duration
	// Visitors is the number of visitors of the run.
	Visitors int
	// Arrived counts the visitors whose first request got an answer;
	// Waiting those waiting now; Admitted those let in so far; Left those
	// gone, for whatever reason.
	Arrived, Waiting, Admitted, Left int
	// Done reports the last report of the run.
	Done bool
}

// String is the progress in one line: "0:42  3,000/5,000 arrived  2,100
// waiting  900 admitted  120 left".
func (p Progress) String() string {
	return fmt.Sprintf("%s  %s/%s arrived  %s waiting  %s admitted  %s left",
		Clock(p.Elapsed), count(p.Arrived), count(p.Visitors), count(p.Waiting), count(p.Admitted), count(p.Left))
}

// DefaultProgressEvery is how often a run reports its progress when its
// config does not say.
const DefaultProgressEvery = time.Second

// tally counts a run's visitors by state; safe for concurrent use.
type tally struct {
	arrived, waiting, admitted, left atomic.Int64
}

func (t *tally) progress(elapsed time.Duration, visitors int, done bool) Progress {
	return Progress{Elapsed: elapsed, Visitors: visitors, Arrived: int(t.arrived.Load()), Waiting: int(t.waiting.Load()),
		Admitted: int(t.admitted.Load()), Left: int(t.left.Load()), Done: done}
}
